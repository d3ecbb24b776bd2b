"""pb_utils.Tensor: a named numpy array in host memory, with DLPack import/export.

A GPU tensor given to from_dlpack is copied to the host there (dlpack.py): every tensor tritium
moves lives in host shared memory, so is_cpu() is always True.

With the C objects (objects.py) `Tensor` subclasses the extension's TensorBase, which holds the
same fields and runs the constructor's common case, name(), as_numpy(), shape() and is_cpu();
the pure-Python class below (`PyTensor`) supplies the rest, and every other case of __init__.
"""

import numpy as np

from . import dtypes
from .dlpack import NOT_DLPACK, SUPPORTED_DEVICES, CapsuleHolder, export_bf16, import_array, is_capsule
from .errors import TritonModelException
from .objects import NATIVE, register
from .pybind_args import MODULE, as_str, is_str, mismatch

_BF16_TEXT = "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead."
_NOT_CONTIGUOUS = (
    "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported."
)
_DLPACK_CPU = 1


class Tensor:
    # _array holds the numpy data: a view over shared memory for request inputs, the
    # user's (contiguous) array for tensors built in model.py, raw uint16 words for BF16.
    __slots__ = ("_name", "_dtype", "_array", "__weakref__")

    def __init__(self, *args, **kwargs):
        if len(args) != 2 or kwargs or not is_str(args[0]) or not isinstance(args[1], np.ndarray):
            raise mismatch(
                "__init__", f"{MODULE}.Tensor(arg0: str, arg1: numpy.ndarray)", args, kwargs, constructor=True
            )
        name, array = as_str(args[0]), args[1]
        dtype = dtypes.from_numpy(array.dtype)
        if dtype is None:
            raise TritonModelException("NumPy dtype is not supported.")
        if not name:
            raise TritonModelException("Tensor name cannot be an empty string.")
        self._name = name
        self._dtype = dtype
        # np.ascontiguousarray makes a 0-d array 1-d, which reported a scalar output as [1]
        # (Triton reports shape []); a contiguous array, 0-d ones included, is kept as it is.
        self._array = array if array.flags.c_contiguous else np.ascontiguousarray(array)

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
    def from_dlpack(*args, **kwargs):
        if len(args) != 2 or kwargs or not is_str(args[0]):
            raise mismatch("from_dlpack", f"(self: str, arg0: object) -> {MODULE}.Tensor", args, kwargs)
        name, tensor = as_str(args[0]), args[1]
        if is_capsule(tensor):
            tensor = CapsuleHolder(tensor)
        elif not (hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__")):
            raise TritonModelException(NOT_DLPACK)
        device = tensor.__dlpack_device__()[0]
        if device not in SUPPORTED_DEVICES:
            raise TritonModelException(
                f"DLPack device type {device} is not supported: tritium takes tensors in host or CUDA memory."
            )
        array, dtype = import_array(tensor)
        if not array.flags.c_contiguous:
            raise TritonModelException(_NOT_CONTIGUOUS)
        if not name:
            raise TritonModelException("Tensor name cannot be an empty string.")
        return Tensor._wrap(name, dtype, array)


PyTensor = Tensor  # the pure-Python implementation, under its own name in both modes

if NATIVE is not None:

    class Tensor(NATIVE.TensorBase):
        __slots__ = ()
        # TensorBase: __init__ for Tensor(str, C-contiguous ndarray of a fixed-size type), else
        # PyTensor.__init__; _wrap, name, as_numpy, shape, is_cpu.
        triton_dtype = PyTensor.triton_dtype
        to_dlpack = PyTensor.to_dlpack
        __dlpack__ = PyTensor.__dlpack__
        __dlpack_device__ = PyTensor.__dlpack_device__
        from_dlpack = PyTensor.__dict__["from_dlpack"]

    register(
        tensor_type=Tensor, tensor_init=PyTensor.__init__, model_exception=TritonModelException, fixed=dtypes.FIXED
    )
