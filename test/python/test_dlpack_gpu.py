"""pb_utils.Tensor.from_dlpack with tensors in GPU memory: copied to the host through the CUDA
driver (tritium_stub/cuda_host_copy.py).

The torch and CuPy cases need a CUDA GPU and run where there is one (the device check in
docs/gpu.md); the error cases run everywhere.
"""

import ctypes
import threading

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from tritium_stub import dlpack


def _cuda_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _cuda_torch()
needs_torch_cuda = pytest.mark.skipif(torch is None, reason="needs torch with a CUDA GPU")


def _driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def _capsule_on(device_type, data_address):
    """A legacy "dltensor" capsule of 4 float32 at data_address on (device_type, 0)."""
    managed = dlpack._DLManagedTensor()
    shape = (ctypes.c_int64 * 1)(4)
    t = managed.dl_tensor
    t.data = data_address
    t.device = dlpack._DLDevice(device_type, 0)
    t.ndim = 1
    t.dtype = dlpack._DLDataType(2, 32, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None
    t.byte_offset = 0
    managed.deleter = dlpack._delete_managed
    address = ctypes.addressof(managed)
    dlpack._live[address] = (managed, shape)
    return dlpack._capsule_new(address, dlpack._NAME, dlpack._DESTRUCTOR)


def test_a_cuda_capsule_that_cannot_be_copied_is_an_error_not_a_crash():
    # Address 16 is no device allocation: the driver refuses the copy, or (no GPU) cannot load.
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("x", _capsule_on(2, 16))
    if _driver_loads():
        assert str(e.value).startswith("Copying the DLPack tensor from GPU 0 to host memory failed: ")
    else:
        assert str(e.value).startswith(
            "The DLPack tensor is in GPU memory and the CUDA driver (libcuda.so.1) cannot be loaded: "
        )


def test_other_devices_are_refused_by_name():
    rocm = 10
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("x", _capsule_on(rocm, 16))
    assert str(e.value) == "DLPack device type 10 is not supported: tritium takes tensors in host or CUDA memory."


@needs_torch_cuda
@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool", "bfloat16"]
)
def test_torch_cuda_tensors_are_copied_to_the_host(dtype):
    src = (torch.arange(24, device="cuda") % 7).to(getattr(torch, dtype)).reshape(2, 3, 4)
    for given in (src, torch.utils.dlpack.to_dlpack(src)):
        t = pb_utils.Tensor.from_dlpack("OUT", given)
        assert t.is_cpu() and t.shape() == [2, 3, 4]
        back = torch.from_dlpack(t.to_dlpack())
        assert back.device.type == "cpu" and back.dtype == src.dtype
        assert torch.equal(back, src.cpu())
        if dtype != "bfloat16":
            assert (t.as_numpy() == src.cpu().numpy()).all()


@needs_torch_cuda
def test_work_still_running_on_a_side_stream_is_waited_for():
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.rand(2048, 2048, device="cuda")
        for _ in range(20):
            a = a @ a / 2048  # seconds of work queued, not done, when from_dlpack runs
        out = a.sum(dim=1)
    got = pb_utils.Tensor.from_dlpack("OUT", torch.utils.dlpack.to_dlpack(out)).as_numpy()
    side.synchronize()
    assert np.allclose(got, out.cpu().numpy())


@needs_torch_cuda
def test_a_thread_without_a_current_context_can_copy():
    src = torch.arange(1000, device="cuda", dtype=torch.float32)
    seen = {}

    def run():
        seen["array"] = pb_utils.Tensor.from_dlpack("OUT", src).as_numpy()

    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert (seen["array"] == np.arange(1000, dtype=np.float32)).all()


@needs_torch_cuda
def test_non_contiguous_and_empty_cuda_tensors():
    with pytest.raises(pb_utils.TritonModelException, match="DLPack tensor is not contiguous"):
        pb_utils.Tensor.from_dlpack("x", torch.zeros(4, 6, device="cuda").t())
    empty = pb_utils.Tensor.from_dlpack("x", torch.zeros(0, 3, device="cuda"))
    assert empty.shape() == [0, 3] and empty.as_numpy().dtype == np.float32


@needs_torch_cuda
def test_the_producer_memory_is_released():
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(5):
        pb_utils.Tensor.from_dlpack("x", torch.utils.dlpack.to_dlpack(torch.ones(1 << 20, device="cuda")))
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


def test_cupy_arrays_are_copied_too():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA GPU")
    src = cupy.arange(12, dtype=cupy.float32).reshape(3, 4) * 2
    t = pb_utils.Tensor.from_dlpack("OUT", src)
    assert (t.as_numpy() == cupy.asnumpy(src)).all()
