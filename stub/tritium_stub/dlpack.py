"""CPU DLPack for pb_utils.Tensor.

numpy's own producer/consumer covers every dtype numpy has. BF16 has none, so BF16 tensors
are exported and imported here through the DLPack C structs (ctypes), which is what lets a
torch model hand bfloat16 tensors to and from pb_utils without going through numpy types.
"""

import ctypes

import numpy as np

from . import dtypes
from .errors import TritonModelException

# Triton's text, with the run of spaces its C++ line continuation leaves in it.
NOT_DLPACK = (
    "Provided tensor is not supported. Tensor must be a DLPack capsule         or "
    "have `__dlpack__` and `__dlpack_device__` attributes"
)

_NAME = b"dltensor"  # a capsule keeps a pointer to its name: keep it alive here
_USED_NAME = b"used_dltensor"
_KDL_CPU, _KDL_BFLOAT = 1, 4


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


def _import_bf16(capsule, managed_ptr):
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
    count = int(np.prod(shape, dtype=np.int64))
    if count:
        raw = (ctypes.c_uint16 * count).from_address(t.data + t.byte_offset)
        words = np.frombuffer(raw, dtype=np.uint16).copy().reshape(shape)
    else:
        words = np.empty(shape, dtype=np.uint16)
    # We copied the data, so consume the capsule and release the producer's memory now.
    _capsule_set_name(capsule, _USED_NAME)
    if managed.deleter:
        managed.deleter(ctypes.cast(managed_ptr, ctypes.POINTER(_DLManagedTensor)))
    return words


def import_array(obj):
    """(numpy array, protocol datatype) for an object with __dlpack__ on the CPU."""
    capsule = obj.__dlpack__()
    if not (is_capsule(capsule) and _capsule_is_valid(capsule, _NAME)):
        raise TritonModelException(NOT_DLPACK)
    managed_ptr = _capsule_pointer(capsule, _NAME)
    dt = _DLManagedTensor.from_address(managed_ptr).dl_tensor.dtype
    if dt.code == _KDL_BFLOAT and dt.bits == 16 and dt.lanes == 1:
        return _import_bf16(capsule, managed_ptr), "BF16"
    try:
        array = np.from_dlpack(CapsuleHolder(capsule))
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise TritonModelException(f"Unable to import the DLPack tensor: {e}") from None
    dtype = dtypes.from_numpy(array.dtype)
    if dtype is None or dtype == "BYTES":
        raise TritonModelException("NumPy dtype is not supported.")
    return array, dtype
