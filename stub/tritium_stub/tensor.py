"""pb_utils.Tensor: a named numpy array (CPU only), with DLPack import/export."""

import numpy as np

from . import dtypes
from .dlpack import CapsuleHolder, export_bf16, import_array, is_capsule
from .errors import TritonModelException

_BF16_TEXT = ("Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
              "from_dlpack() instead.")
_NOT_DLPACK = ("Provided tensor is not supported. Tensor must be a DLPack capsule or have "
               "__dlpack__ and __dlpack_device__ attributes")
_NOT_CONTIGUOUS = ("DLPack tensor is not contiguous. Only contiguous DLPack tensors that are "
                   "stored in C-Order are supported.")
_DLPACK_CPU, _DLPACK_CUDA_HOST = 1, 3


class Tensor:
    # _array holds the numpy data: a view over shared memory for request inputs, the
    # user's (contiguous) array for tensors built in model.py, raw uint16 words for BF16.
    __slots__ = ("_name", "_dtype", "_array", "__weakref__")

    def __init__(self, name, array):
        if name is None or array is None:
            raise TypeError("Tensor(): incompatible constructor arguments; name and array "
                            "must not be None")
        if not isinstance(name, str):
            raise TypeError(f"Tensor(): name must be str, got {type(name)}")
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)  # pybind's array caster accepts any sequence
        dtype = dtypes.from_numpy(array.dtype)
        if dtype is None:
            raise TritonModelException("NumPy dtype is not supported.")
        if not name:
            raise TritonModelException("Tensor name cannot be an empty string.")
        self._name = name
        self._dtype = dtype
        self._array = np.ascontiguousarray(array)

    @classmethod
    def _wrap(cls, name, dtype, array):
        """Build without validation (request inputs, DLPack imports)."""
        t = object.__new__(cls)
        t._name = name
        t._dtype = dtype
        t._array = array
        return t

    def name(self):
        return self._name

    def as_numpy(self):
        if self._dtype == "BF16":
            raise TritonModelException(_BF16_TEXT)
        return self._array

    def shape(self):
        return list(self._array.shape)

    def is_cpu(self):
        return True

    def triton_dtype(self):
        return dtypes.TRITON_CODE[self._dtype]

    def to_dlpack(self):
        return self.__dlpack__()

    def __dlpack__(self, stream=None, **kwargs):
        # NumPy >= 2.1 passes max_version/copy/dl_device; forward them to numpy's producer.
        if self._dtype == "BYTES":
            raise TritonModelException("DLPack does not have support for string tensors.")
        if self._dtype == "BF16":
            return export_bf16(self._array)
        array = self._array
        if not array.flags.writeable and "max_version" not in kwargs:
            # A legacy ("dltensor") capsule cannot say read-only, so numpy refuses to export
            # read-only arrays (e.g. ones imported by from_dlpack) that way: hand out a copy.
            array = array.copy()
        return array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (_DLPACK_CPU, 0)

    @staticmethod
    def from_dlpack(name, tensor):
        if name is None or tensor is None:
            raise TypeError("from_dlpack(): incompatible function arguments")
        if not isinstance(name, str):
            raise TypeError(f"from_dlpack(): name must be str, got {type(name)}")
        if is_capsule(tensor):
            tensor = CapsuleHolder(tensor)
        elif not (hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__")):
            raise TritonModelException(_NOT_DLPACK)
        device = tensor.__dlpack_device__()[0]
        if device not in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
            raise TritonModelException(
                f"DLPack device type {device} is not supported: tritium runs CPU tensors only.")
        array, dtype = import_array(tensor)
        if not array.flags.c_contiguous:
            raise TritonModelException(_NOT_CONTIGUOUS)
        if not name:
            raise TritonModelException("Tensor name cannot be an empty string.")
        return Tensor._wrap(name, dtype, array)

    def __repr__(self):
        return f"Tensor({self._name!r}, {self._dtype}, shape={list(self._array.shape)})"
