"""Device-to-host copies of CUDA DLPack tensors, through the CUDA driver API (ctypes).

Every tensor tritium moves lives in host shared memory, so a GPU tensor handed to
pb_utils.Tensor.from_dlpack (torch, CuPy, JAX...) is copied to the host at that call. The
driver library (libcuda.so.1) is what every CUDA framework already loaded into the process, so
this needs no CUDA package of its own and costs nothing to models that never pass GPU tensors:
the library is opened on the first GPU tensor only.
"""

import ctypes

from .errors import TritonModelException

_CUDA_SUCCESS = 0
_lib = None


def _driver():
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise TritonModelException(
                f"The DLPack tensor is in GPU memory and the CUDA driver (libcuda.so.1) cannot be loaded: {e}"
            ) from None
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        lib.cuCtxPushCurrent_v2.argtypes = [ctypes.c_void_p]
        lib.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        lib.cuDevicePrimaryCtxRelease_v2.argtypes = [ctypes.c_int]
        _lib = lib
    return _lib


def _check(lib, what, rc, device_id):
    if rc != _CUDA_SUCCESS:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(name))
        text = name.value.decode() if name.value else f"error {rc}"
        raise TritonModelException(
            f"Copying the DLPack tensor from GPU {device_id} to host memory failed: {what} returned {text}"
        )


def copy_to_host(dst_address, src_address, nbytes, device_id):
    """Copies nbytes at device address src_address (on GPU device_id) to host address dst_address.

    The device's primary context (the one the CUDA runtime, and so every framework, uses) is made
    current for the copy, whichever thread the model runs execute on, and synchronized first:
    the producer may still be writing the tensor on a stream of its own, and DLPack's legacy
    capsule carries no stream to wait on.
    """
    lib = _driver()
    _check(lib, "cuInit", lib.cuInit(0), device_id)
    device = ctypes.c_int()
    _check(lib, "cuDeviceGet", lib.cuDeviceGet(ctypes.byref(device), device_id), device_id)
    ctx = ctypes.c_void_p()
    _check(lib, "cuDevicePrimaryCtxRetain", lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device.value), device_id)
    try:
        _check(lib, "cuCtxPushCurrent", lib.cuCtxPushCurrent_v2(ctx), device_id)
        try:
            _check(lib, "cuCtxSynchronize", lib.cuCtxSynchronize(), device_id)
            if nbytes:
                _check(lib, "cuMemcpyDtoH", lib.cuMemcpyDtoH_v2(dst_address, src_address, nbytes), device_id)
        finally:
            lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
    finally:
        lib.cuDevicePrimaryCtxRelease_v2(device.value)
