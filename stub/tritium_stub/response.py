"""pb_utils.InferenceResponse.

With the C objects (objects.py) the class subclasses the extension's ResponseBase, which holds
the same fields and runs InferenceResponse(output_tensors=[Tensor, ...]) and the accessors; every
other constructor call runs PyInferenceResponse.__init__ below.
"""

from .errors import TritonError, TritonModelException
from .objects import NATIVE, register
from .parameters import params_to_json
from .pybind_args import MODULE, is_sequence_of, mismatch
from .tensor import Tensor

# Triton 2.51's binding, plus the `parameters` argument later versions added.
_SIGNATURE = (
    f"{MODULE}.InferenceResponse(output_tensors: List[{MODULE}.Tensor] = [], "
    f"error: {MODULE}.TritonError = None, parameters: object = None)"
)


class InferenceResponse:
    __slots__ = ("_outputs", "_error", "_params", "__weakref__")

    # Triton's default is an empty list, and an explicit None is a TypeError there, so the
    # default is a sentinel (an immutable empty tuple) rather than None.
    def __init__(self, output_tensors=(), error=None, parameters=None):
        # A None item passes pybind's caster (a null pointer) and is refused by Triton itself.
        if not is_sequence_of(output_tensors, Tensor, none_ok=True) or (
            error is not None and not isinstance(error, TritonError)
        ):
            args = (output_tensors,) if error is None else (output_tensors, error)
            kwargs = {"parameters": parameters} if parameters is not None else None
            raise mismatch("__init__", _SIGNATURE, args, kwargs, constructor=True)
        outputs = list(output_tensors)
        if any(t is None for t in outputs):
            raise TritonModelException("Output tensor for inference response should not be empty.")
        self._outputs = outputs
        self._error = error
        self._params = params_to_json(parameters)

    @classmethod
    def _wrap(cls, outputs, error, params):
        """Build without validation: BLS answers, whose parts the stub made itself."""
        r = object.__new__(cls)
        r._outputs = outputs
        r._error = error
        r._params = params
        return r

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return self._params or "{}"


PyInferenceResponse = InferenceResponse  # the pure-Python implementation, in both modes

if NATIVE is not None:

    class InferenceResponse(NATIVE.ResponseBase):
        __slots__ = ()
        # ResponseBase: __init__ (its common case; else PyInferenceResponse.__init__), _wrap,
        # output_tensors, has_error, error, parameters.

    register(response_init=PyInferenceResponse.__init__)
