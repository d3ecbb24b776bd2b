"""DLPack for pb_utils.Tensor.

numpy's own producer/consumer covers every dtype numpy has, in host memory. Two cases go
through the DLPack C structs (ctypes) instead: BF16, which numpy has no type for (so a torch
model can hand bfloat16 tensors to and from pb_utils), and tensors in GPU memory, which are
copied to the host here (cuda_host_copy) because every tensor tritium moves lives in host
shared memory.
"""

import ctypes

import numpy as np

from . import dtypes
from .cuda_host_copy import copy_to_host
from .errors import TritonModelException

# Triton's text, with the run of spaces its C++ line continuation leaves in it.
NOT_DLPACK = (
    "Provided tensor is not supported. Tensor must be a DLPack capsule         or "
    "have `__dlpack__` and `__dlpack_device__` attributes"
)

_NAME = b"dltensor"  # a capsule keeps a pointer to its name: keep it alive here
_USED_NAME = b"used_dltensor"
_KDL_CPU, _KDL_BFLOAT = 1, 4
# Device types (dlpack.h DLDeviceType): host memory numpy reads itself, and CUDA device memory.
_KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 2, 3, 13
_HOST_DEVICES = (_KDL_CPU, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED)
SUPPORTED_DEVICES = (*_HOST_DEVICES, _KDL_CUDA)
# DLDataType code of each numpy kind (dlpack.h: kDLInt, kDLUInt, kDLFloat, kDLBool).
_DL_CODE = {"i": 0, "u": 1, "f": 2, "b": 6}
# (DLDataType code, bits) -> (numpy dtype, protocol datatype) of the tensors copied here: BF16
# (as uint16 words) from anywhere, and every fixed datatype from GPU memory (lanes must be 1).
_COPIED = {(_DL_CODE[dt.kind], dt.itemsize * 8): (dt, name) for name, dt in dtypes.FIXED.items() if name != "BF16"}
_COPIED[(_KDL_BFLOAT, 16)] = (dtypes.FIXED["BF16"], "BF16")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _Deleter),
]


def _capi(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_capsule_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# The destructor gets a capsule whose refcount is already 0: use raw pointers, never py_object.
_raw_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_raw_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)

# address of an exported DLManagedTensor -> the Python objects its memory depends on
_live = {}


@_Deleter
def _delete_managed(managed):
    _live.pop(ctypes.addressof(managed.contents), None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _destroy_capsule(capsule):
    # Only an unconsumed capsule still owns its tensor; a consumer calls the deleter itself.
    if _raw_is_valid(capsule, _NAME):
        _live.pop(_raw_pointer(capsule, _NAME), None)


_DESTRUCTOR = ctypes.cast(_destroy_capsule, ctypes.c_void_p).value


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


class CapsuleHolder:
    """Gives a bare DLPack capsule the __dlpack__ protocol that numpy.from_dlpack expects."""

    __slots__ = ("_capsule",)

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        # The capsule says where its memory is (a torch CUDA tensor's to_dlpack(), say).
        if _capsule_is_valid(self._capsule, _NAME):
            device = _DLManagedTensor.from_address(_capsule_pointer(self._capsule, _NAME)).dl_tensor.device
            return (device.device_type, device.device_id)
        return (_KDL_CPU, 0)


def export_bf16(words):
    """A "dltensor" capsule over a contiguous uint16 array holding bfloat16 words."""
    managed = _DLManagedTensor()
    shape = (ctypes.c_int64 * words.ndim)(*words.shape)
    t = managed.dl_tensor
    t.data = words.ctypes.data
    t.device = _DLDevice(_KDL_CPU, 0)
    t.ndim = words.ndim
    t.dtype = _DLDataType(_KDL_BFLOAT, 16, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None
    t.byte_offset = 0
    managed.deleter = _delete_managed
    address = ctypes.addressof(managed)
    _live[address] = (managed, shape, words)
    return _capsule_new(address, _NAME, _DESTRUCTOR)


def _import_copy(capsule, managed_ptr, np_dtype):
    """A C-contiguous copy of the capsule's tensor (host or CUDA memory) as np_dtype; consumes it."""
    managed = _DLManagedTensor.from_address(managed_ptr)
    t = managed.dl_tensor
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expected:
                raise TritonModelException(
                    "DLPack tensor is not contiguous. Only contiguous DLPack tensors that "
                    "are stored in C-Order are supported."
                )
            expected *= shape[i]
    array = np.empty(shape, dtype=np_dtype)
    if array.nbytes:
        source = t.data + t.byte_offset
        if t.device.device_type == _KDL_CUDA:
            copy_to_host(array.ctypes.data, source, array.nbytes, t.device.device_id)
        else:
            ctypes.memmove(array.ctypes.data, source, array.nbytes)
    # We copied the data, so consume the capsule and release the producer's memory now.
    _capsule_set_name(capsule, _USED_NAME)
    if managed.deleter:
        managed.deleter(ctypes.cast(managed_ptr, ctypes.POINTER(_DLManagedTensor)))
    return array


def import_array(obj):
    """(numpy array, protocol datatype) for an object with __dlpack__, in host or CUDA memory."""
    capsule = obj.__dlpack__()
    if not (is_capsule(capsule) and _capsule_is_valid(capsule, _NAME)):
        raise TritonModelException(NOT_DLPACK)
    managed_ptr = _capsule_pointer(capsule, _NAME)
    t = _DLManagedTensor.from_address(managed_ptr).dl_tensor
    dt = t.dtype
    on_gpu = t.device.device_type == _KDL_CUDA
    copied = _COPIED.get((dt.code, dt.bits)) if dt.lanes == 1 else None
    if copied is not None and (on_gpu or copied[1] == "BF16"):
        np_dtype, datatype = copied
        return _import_copy(capsule, managed_ptr, np_dtype), datatype
    if on_gpu:
        raise TritonModelException("NumPy dtype is not supported.")
    try:
        array = np.from_dlpack(CapsuleHolder(capsule))
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise TritonModelException(f"Unable to import the DLPack tensor: {e}") from None
    dtype = dtypes.from_numpy(array.dtype)
    if dtype is None or dtype == "BYTES":
        raise TritonModelException("NumPy dtype is not supported.")
    return array, dtype
