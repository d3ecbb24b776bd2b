"""tritium's stand-in for Triton's embedded `c_python_backend_utils` module.

Triton builds these classes in C++; here they are Python classes from tritium_stub. The stub
copies INJECTED onto `triton_python_backend_utils` so `pb_utils.Tensor` etc. resolve.
"""

from tritium_stub.bls import ResponseIterator
from tritium_stub.errors import TritonError, TritonModelException
from tritium_stub.logger import Logger
from tritium_stub.memory import TRITONSERVER_MEMORY_CPU, TRITONSERVER_MEMORY_GPU, MemoryType, PreferredMemory
from tritium_stub.metrics import Metric, MetricFamily, MetricKind
from tritium_stub.model_control import get_model_dir, is_model_ready, load_model, unload_model
from tritium_stub.request import InferenceRequest
from tritium_stub.response import InferenceResponse
from tritium_stub.response_sender import InferenceResponseSender
from tritium_stub.tensor import Tensor
from tritium_stub.trace import InferenceTrace

# What Triton's stub attaches to triton_python_backend_utils (plus get_model_dir).
INJECTED = (
    "TritonError",
    "TritonModelException",
    "Tensor",
    "InferenceRequest",
    "InferenceResponse",
    "Logger",
    "PreferredMemory",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_MEMORY_CPU",
    "MetricFamily",
    "load_model",
    "unload_model",
    "is_model_ready",
    "get_model_dir",
)

__all__ = INJECTED + (
    "InferenceResponseSender",
    "ResponseIterator",
    "Metric",
    "InferenceTrace",
    "MemoryType",
    "MetricKind",
)


# Report the classes as Triton's module does, e.g. in "found type '<class
# 'c_python_backend_utils.InferenceResponse'>'" texts; pickling still resolves through here.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = __name__


def inject_into(module):
    for name in INJECTED:
        setattr(module, name, globals()[name])
