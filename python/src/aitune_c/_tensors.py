"""Small tensor helpers: dtype names, torch detection, numpy views.

Outputs are made in the extension (ext/tensors.c): each is one copy out of
the library (the C API lends outputs only until the module's next call)
into a ``_core.Buffer``, wrapped by numpy.asarray and, for torch inputs,
torch.from_numpy without a second copy.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _core

# ait_dtype codes (ONNX's TensorProto numbering) -> numpy dtypes
NUMPY_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}


def dtype_name(code: int) -> str:
    return _core.dtype_name(code)


def torch_module():
    """torch when the program has imported it, else None (never imports it)."""
    return sys.modules.get("torch")


def is_torch_tensor(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def as_numpy(x) -> np.ndarray:
    """Any input (torch, numpy, buffer) as a numpy array, for comparisons."""
    if is_torch_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)
