#!/usr/bin/env python3
"""Time PyTorch (eager, CPU) on one of scripts/make_models.py's models.

    python3 bench/torch_worker.py NAME --inputs DIR [--threads T]
        [--iters N] [--warmup N] [--seconds S] [--save-outputs DIR]

The nn.Module is rebuilt from scripts/make_models.py's MODELS with the seed
the exporter uses (torch.manual_seed(0), np.random.seed(0) before the
builder), so its weights equal the exported ONNX model's. torch.set_num_threads(T)
(default os.cpu_count()), torch.inference_mode(), inputs DIR/input_K.npy in
graph-input order passed positionally. Prints one JSON line like
bench/ort_worker.py. Run by bench/run.py in its own process.
"""
import argparse
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402


def load_make_models():
    path = os.path.join(HERE, "..", "scripts", "make_models.py")
    spec = importlib.util.spec_from_file_location("make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(name):
    import torch
    mm = load_make_models()
    if name not in mm.MODELS:
        sys.exit(f"torch_worker: unknown model {name}")
    torch.manual_seed(0)
    np.random.seed(0)
    model = mm.MODELS[name][0]()[0]
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--save-outputs", default=None)
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    model = build(a.name)
    args = [torch.from_numpy(x) for x in common.load_inputs(a.inputs)]
    with torch.inference_mode():
        if a.save_outputs:
            out = model(*args)
            out = out if isinstance(out, (tuple, list)) else [out]
            common.save_outputs(a.save_outputs, [o.numpy() for o in out])
        r = common.time_loop(lambda: model(*args), args[0].shape[0], a.iters, a.warmup, a.seconds)
    r["engine"] = "pytorch"
    r["threads"] = a.threads
    r["version"] = torch.__version__
    common.emit(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
