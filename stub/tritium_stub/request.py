"""pb_utils.InferenceRequest: requests received in execute, and BLS requests built by models.

Received requests are built per batch on the hot path, so they copy only scalars from the
`exec` message and decode input tensors on the first `inputs()` call.
"""

import asyncio

from .bls import bls_exec
from .errors import TritonModelException
from .memory import DEFAULT_PREFERRED_MEMORY, PreferredMemory
from .parameters import params_to_json
from .response_sender import InferenceResponseSender, RequestSlot
from .state import STATE
from .tensor import Tensor
from .tensor_codec import decode_input
from .trace import NO_TRACE, InferenceTrace

_REQUIRED = object()
RELEASE_RESCHEDULE = 2  # TRITONSERVER_REQUEST_RELEASE_RESCHEDULE


class InferenceRequest:
    __slots__ = (
        "_request_id", "_correlation_id", "_inputs", "_input_descs", "_requested",
        "_model_name", "_model_version", "_flags", "_timeout", "_preferred_memory", "_trace",
        "_params", "_slot", "_sender", "_release_flags", "__weakref__",
    )

    # Argument order follows Triton's binding (keywords are what models use).
    def __init__(self, request_id="", correlation_id=0, inputs=_REQUIRED,
                 requested_output_names=_REQUIRED, model_name=_REQUIRED, model_version=-1,
                 flags=0, timeout=0, preferred_memory=DEFAULT_PREFERRED_MEMORY,
                 trace=NO_TRACE, parameters=None):
        for arg, value in (("inputs", inputs), ("requested_output_names", requested_output_names),
                           ("model_name", model_name)):
            if value is _REQUIRED:
                raise TypeError(f"InferenceRequest(): missing required argument '{arg}'")
        for arg, value in (("request_id", request_id), ("correlation_id", correlation_id),
                           ("inputs", inputs), ("requested_output_names", requested_output_names),
                           ("model_name", model_name), ("model_version", model_version),
                           ("flags", flags), ("timeout", timeout),
                           ("preferred_memory", preferred_memory), ("trace", trace)):
            if value is None:
                raise TypeError(f"InferenceRequest(): argument '{arg}' must not be None")
        if isinstance(model_name, bytes):
            model_name = model_name.decode("utf-8")  # often read from a BYTES tensor
        _expect(request_id, str, "request_id")
        _expect(model_name, str, "model_name")
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (list, tuple)):
            raise TypeError("InferenceRequest(): inputs must be a list of Tensor")
        if isinstance(requested_output_names, (str, bytes)) or not all(
                isinstance(n, str) for n in requested_output_names):
            raise TypeError("InferenceRequest(): requested_output_names must be a list of str")
        for arg, value in (("model_version", model_version), ("flags", flags),
                           ("timeout", timeout)):
            _expect(value, int, arg)
        _expect(preferred_memory, PreferredMemory, "preferred_memory")
        _expect(trace, InferenceTrace, "trace")
        for t in inputs:
            if t is None:
                raise TritonModelException(
                    f"Input tensor for request with id '{request_id}' and model name "
                    f"'{model_name}' should not be empty.")
            _expect(t, Tensor, "inputs")
        params = params_to_json(parameters)
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = list(inputs)
        self._input_descs = None
        self._requested = list(requested_output_names)
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._preferred_memory = preferred_memory
        self._trace = trace
        self._params = params
        self._slot = None
        self._sender = None
        self._release_flags = 1

    @classmethod
    def _received(cls, m):
        """A request from an `exec` message (keys per docs/ipc.md)."""
        r = object.__new__(cls)
        r._request_id = m.get("id", "")
        r._correlation_id = m.get("corr", 0)
        r._inputs = None
        r._input_descs = m["inputs"]
        outs = m["outs"]
        if outs is None:  # the client named no outputs: every output of the config
            outs = list(STATE.config_outputs)
        r._requested = outs
        r._model_name = STATE.name
        r._model_version = -1
        r._flags = m.get("flags", 0)
        r._timeout = m.get("timeout", 0)
        r._preferred_memory = DEFAULT_PREFERRED_MEMORY
        r._trace = NO_TRACE
        r._params = m.get("params")
        r._slot = RequestSlot(m["rid"], outs, m.get("cflag"))
        r._sender = None
        r._release_flags = 1
        return r

    def inputs(self):
        inputs = self._inputs
        if inputs is None:
            channel = STATE.channel
            inputs = self._inputs = [decode_input(channel, d) for d in self._input_descs]
        return inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def requested_output_names(self):
        return set(self._requested)

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        _expect(flags, int, "flags")
        self._flags = flags

    def timeout(self):
        return self._timeout

    def parameters(self):
        return self._params or "{}"

    def trace(self):
        return self._trace

    def is_cancelled(self):
        return self._slot is not None and self._slot.is_cancelled()

    def get_response_sender(self):
        if self._slot is None:
            raise TritonModelException(
                "Unable to send response. Response sender has no reference to the decoupled "
                "state of the model.")
        sender = self._sender
        if sender is None:
            sender = self._sender = InferenceResponseSender(self._slot)
        return sender

    def set_release_flags(self, flags):
        _expect(flags, int, "flags")
        self._release_flags = flags

    def exec(self, decoupled=False):
        return bls_exec(self, decoupled)

    def async_exec(self, decoupled=False):
        loop = asyncio.get_running_loop()  # RuntimeError without one, as in Triton
        future = loop.create_future()
        try:
            future.set_result(bls_exec(self, decoupled))
        except Exception as e:
            future.set_exception(e)
        return future

    def __repr__(self):
        return f"InferenceRequest(id={self._request_id!r}, model={self._model_name!r})"


def _expect(value, kind, arg):
    if not isinstance(value, kind):
        raise TypeError(f"InferenceRequest(): argument '{arg}' has type {type(value)}")
