"""Small tensor helpers.

Outputs are made in the extension (ext/tensors.c): each is one copy out of
the library (the C API lends outputs only until the module's next call)
into a ``_core.Buffer``, wrapped by numpy.asarray and, for torch inputs,
torch.from_numpy without a second copy.
"""

from __future__ import annotations

import sys

import numpy as np


def is_torch_tensor(x) -> bool:
    """Without importing torch: a program that has none has no tensors of it."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def as_numpy(x) -> np.ndarray:
    """Any input (torch, numpy, buffer) as a numpy array, for comparisons."""
    if is_torch_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)
