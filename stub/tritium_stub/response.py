"""pb_utils.InferenceResponse."""

from .errors import TritonError, TritonModelException
from .parameters import params_to_json
from .tensor import Tensor


class InferenceResponse:
    __slots__ = ("_outputs", "_error", "_params", "__weakref__")

    # Triton's default is an empty list, and an explicit None is a TypeError there, so the
    # default is a sentinel (an immutable empty tuple) rather than None.
    def __init__(self, output_tensors=(), error=None, parameters=None):
        if output_tensors is None or isinstance(output_tensors, (str, bytes, dict)):
            raise TypeError("InferenceResponse(): output_tensors must be a list of Tensor")
        outputs = list(output_tensors)
        for t in outputs:
            if t is None:
                raise TritonModelException(
                    "Output tensor for inference response should not be empty.")
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"InferenceResponse(): output_tensors must hold Tensor objects, got {type(t)}")
        if error is not None and not isinstance(error, TritonError):
            raise TypeError(f"InferenceResponse(): error must be a TritonError, got {type(error)}")
        self._outputs = outputs
        self._error = error
        self._params = params_to_json(parameters)

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return self._params or "{}"

    def __repr__(self):
        names = [t.name() for t in self._outputs]
        return f"InferenceResponse(outputs={names}, error={self._error!r})"
