"""Datatype tables: protocol strings ("FP32", "BYTES", ...) <-> numpy dtypes.

BF16 has no numpy type; its elements travel as raw 2-byte words held in a uint16 array.
"""

import numpy as np

# Fixed-size protocol datatypes and the numpy dtype their bytes are viewed as.
FIXED = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.uint16),
}

# numpy dtype -> protocol string, for arrays handed to pb_utils.Tensor. Keyed by dtype
# equality, so byte-swapped dtypes (">f4") are not found and are rejected like in Triton.
_FROM_NUMPY = {dt: name for name, dt in FIXED.items() if name != "BF16"}
_OBJECT = np.dtype(np.object_)

# TRITONSERVER_DataType numbering, for Tensor.triton_dtype().
TRITON_CODE = {
    "BOOL": 1,
    "UINT8": 2,
    "UINT16": 3,
    "UINT32": 4,
    "UINT64": 5,
    "INT8": 6,
    "INT16": 7,
    "INT32": 8,
    "INT64": 9,
    "FP16": 10,
    "FP32": 11,
    "FP64": 12,
    "BYTES": 13,
    "BF16": 14,
}


def from_numpy(dtype):
    """Protocol datatype of a numpy dtype, or None when Triton rejects it."""
    name = _FROM_NUMPY.get(dtype)
    if name is not None:
        return name
    if dtype == _OBJECT or dtype.kind == "S":
        return "BYTES"
    return None
