"""CUDA tensors through DLPack (issue 25).

Without a GPU: what the package does with a DLPack object that says it lives
in CUDA memory (a ctypes-made capsule whose pointer is never read): copied
before tuning is impossible for a non-torch producer, so it is refused; a
module tuned on a host backend refuses it with a message that says what to
do. With a GPU and torch (the lent machine: AITUNE_DEVICE_TESTS=1): torch
CUDA tensors in and out, in place, into caller tensors and as views,
against the host run."""
import ctypes
import os

import numpy as np
import pytest

import aitune_c as ait
from conftest import FAST, onnx_mlp


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeCudaArray:
    """A float32 array that claims CUDA device 0 (its data pointer is bogus:
    a backend that reads host memory must refuse it without touching it)."""

    def __init__(self, shape):
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._mt = _Managed()
        t = self._mt.dl_tensor
        t.data = 0x10
        t.device = _Device(2, 0)
        t.ndim = len(shape)
        t.dtype = _DType(2, 32, 1)
        t.shape = self._shape

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self._mt), b"dltensor", None)


def test_cuda_array_refused_before_tuning():
    core = ait._core.Module.from_bytes(onnx_mlp(8))
    with pytest.raises(ait.Error, match="CUDA array is taken once the module is tuned"):
        core.run([FakeCudaArray((2, 8))])


def test_cuda_array_refused_by_a_host_backend():
    x = np.ones((2, 8), np.float32)
    tuned = ait.tune(onnx_mlp(8), x, strategy=ait.OneBackend("native", perf_validation=False),
                     **FAST)
    with pytest.raises(ait.Error) as e:
        tuned.run(FakeCudaArray((2, 8)))
    msg = str(e.value)
    assert "CUDA tensors" in msg and "host memory only" in msg and "io_mem='cuda'" in msg, msg
    assert e.value.status == ait._core.E_UNSUPPORTED
    # the module still runs host inputs afterwards
    np.testing.assert_allclose(tuned.run(x)[0], tuned(x), rtol=0, atol=0)


def test_io_mem_is_checked():
    with pytest.raises(ValueError, match="io_mem"):
        ait.tune(onnx_mlp(8), np.ones((2, 8), np.float32), backends=["native"], io_mem="gpu",
                 **FAST)


def test_out_needs_device_inputs():
    x = np.ones((2, 8), np.float32)
    tuned = ait.tune(onnx_mlp(8), x, backends=["native"], **FAST)
    with pytest.raises(ValueError, match="only with CUDA inputs"):
        tuned.run(x, out=[np.empty((2, 8), np.float32)])


@pytest.mark.skipif(os.environ.get("AITUNE_DEVICE_TESTS") != "1",
                    reason="needs a GPU, torch with CUDA and the cuda plugin (AITUNE_DEVICE_TESTS=1)")
def test_torch_cuda_tensors_in_and_out():
    import torch
    x = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    want = ait.tune(onnx_mlp(32), x, backends=["native"], **FAST)(x)
    xd = torch.from_numpy(x).cuda()
    # io_mem="cuda" from the sample; a tiny MLP need not beat the CPU reference
    tuned = ait.tune(onnx_mlp(32), xd, strategy=ait.OneBackend("cuda", perf_validation=False),
                     **FAST)
    assert tuned.backend.startswith("cuda"), tuned.backend
    y = tuned(xd)
    assert y.is_cuda and y.shape == (4, 32)
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    out = torch.empty(4, 32, device="cuda")
    (r,) = tuned.run(xd, out=[out])
    assert r.data_ptr() == out.data_ptr()
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    (v,) = tuned.run(xd, views=True)
    np.testing.assert_allclose(v.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    # a non-contiguous CUDA input is made contiguous on the device
    xt = torch.from_numpy(np.ascontiguousarray(x.T)).cuda().t()
    np.testing.assert_allclose(tuned(xt).cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    # host inputs still work on the same module, outputs back on the host
    np.testing.assert_allclose(tuned(x), want, rtol=1e-4, atol=1e-5)
