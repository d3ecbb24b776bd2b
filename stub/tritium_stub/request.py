"""pb_utils.InferenceRequest: requests received in execute, and BLS requests built by models.

Received requests are built per batch on the hot path, so they copy only scalars from the
`exec` message and decode input tensors on the first `inputs()` call.

With the C objects (objects.py) the class subclasses the extension's RequestBase, which holds
the same fields, builds received requests (`received`) and runs their accessors and `inputs()`;
the constructor of BLS requests, the sender, flags, cancellation and exec stay the Python
methods of PyInferenceRequest below.
"""

import operator

from .bls import bls_exec
from .errors import TritonModelException
from .memory import DEFAULT_PREFERRED_MEMORY, PreferredMemory
from .objects import NATIVE, register
from .parameters import params_to_json
from .pybind_args import MODULE, as_str, bind, is_bool, is_int, is_sequence_of, is_str, mismatch
from .response_sender import InferenceResponseSender, RequestSlot
from .state import STATE
from .tensor import Tensor
from .tensor_codec import decode_input
from .trace import NO_TRACE, InferenceTrace, request_trace

RELEASE_RESCHEDULE = 2  # TRITONSERVER_REQUEST_RELEASE_RESCHEDULE


class InferenceRequest:
    __slots__ = (
        "_request_id",
        "_correlation_id",
        "_inputs",
        "_input_descs",
        "_requested",
        "_model_name",
        "_model_version",
        "_flags",
        "_timeout",
        "_preferred_memory",
        "_trace",
        "_params",
        "_slot",
        "_sender",
        "_release_flags",
        "__weakref__",
    )

    def __init__(self, *args, **kwargs):
        # Models build one per BLS call, almost always with keywords only: check just the
        # arguments given (defaults always pass), as pybind's casters would, and read the rest
        # from the defaults one by one (no merged dict: this runs on every call).
        if args:
            given = bind(_NAMES, _DEFAULTS, args, kwargs)
            if given is None:
                raise mismatch("__init__", _signature(), args, kwargs, constructor=True)
        elif _REQUIRED <= kwargs.keys():
            given = kwargs
        else:
            raise mismatch("__init__", _signature(), args, kwargs, constructor=True)
        for k, v in given.items():
            check = _CHECKS.get(k)
            if check is None or not check(v):
                raise mismatch("__init__", _signature(), args, kwargs, constructor=True)
        get, d = given.get, _DEFAULTS
        model_name = as_str(given["model_name"])  # often read from a BYTES tensor
        request_id = as_str(get("request_id", d["request_id"]))
        inputs = list(given["inputs"])
        for t in inputs:
            if t is None:
                raise TritonModelException(
                    f"Input tensor for request with id '{request_id}' and model name "
                    f"'{model_name}' should not be empty."
                )
        parameters = get("parameters")
        correlation_id = get("correlation_id", d["correlation_id"])
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = inputs
        self._input_descs = None
        self._requested = list(given["requested_output_names"])
        self._model_name = model_name
        self._model_version = get("model_version", d["model_version"])
        self._flags = get("flags", d["flags"])
        self._timeout = get("timeout", d["timeout"])
        self._preferred_memory = get("preferred_memory", d["preferred_memory"])
        self._trace = get("trace", d["trace"])
        self._params = None if parameters is None else params_to_json(parameters)
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
        r._trace = request_trace(m["rid"]) if m.get("tr") else NO_TRACE
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

    def set_flags(self, *args):
        if len(args) != 1 or not is_int(args[0], 32, signed=False):
            raise mismatch("set_flags", _FLAGS_SIGNATURE, (self,) + args)
        self._flags = operator.index(args[0])

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
                "Unable to send response. Response sender has no reference to the decoupled state of the model."
            )
        sender = self._sender
        if sender is None:
            sender = self._sender = InferenceResponseSender(self._slot)
        return sender

    def set_release_flags(self, *args):
        if len(args) != 1 or not is_int(args[0], 32, signed=False):
            raise mismatch("set_release_flags", _FLAGS_SIGNATURE, (self,) + args)
        self._release_flags = operator.index(args[0])

    def exec(self, *args, **kwargs):
        return bls_exec(self, _decoupled("exec", self, args, kwargs) if args or kwargs else False)

    def async_exec(self, *args, **kwargs):
        decoupled = _decoupled("async_exec", self, args, kwargs)
        import asyncio  # not at start: see async_loop.py

        loop = asyncio.get_running_loop()  # RuntimeError without one, as in Triton
        # A thread of the loop's executor waits for the answer (reading ring A when no other
        # thread does, see inbox.py), so several calls awaited together run in parallel.
        return loop.run_in_executor(None, bls_exec, self, decoupled)


_FLAGS_SIGNATURE = f"(self: {MODULE}.InferenceRequest, arg0: int) -> None"


def _decoupled(name, request, args, kwargs):
    a = bind(("decoupled",), {"decoupled": False}, args, kwargs)
    if a is None or not is_bool(a["decoupled"]):
        raise mismatch(
            name, f"(self: {MODULE}.InferenceRequest, decoupled: bool = False) -> object", (request,) + args, kwargs
        )
    return bool(a["decoupled"])


def _signature():
    return (
        f"{MODULE}.InferenceRequest(request_id: str = '', correlation_id: object = 0, "
        "inputs: List[triton::backend::python::PbTensor], requested_output_names: List[str], "
        "model_name: str, model_version: int = -1, flags: int = 0, timeout: int = 0, "
        f"preferred_memory: {MODULE}.PreferredMemory = {DEFAULT_PREFERRED_MEMORY!r}, "
        f"trace: {MODULE}.InferenceTrace = {NO_TRACE!r}, parameters: object = None)"
    )


# Triton's binding: names in order (keywords are what models use) and defaults.
_NAMES = (
    "request_id",
    "correlation_id",
    "inputs",
    "requested_output_names",
    "model_name",
    "model_version",
    "flags",
    "timeout",
    "preferred_memory",
    "trace",
    "parameters",
)
_DEFAULTS = {
    "request_id": "",
    "correlation_id": 0,
    "model_version": -1,
    "flags": 0,
    "timeout": 0,
    "preferred_memory": DEFAULT_PREFERRED_MEMORY,
    "trace": NO_TRACE,
    "parameters": None,
}


_REQUIRED = frozenset(n for n in _NAMES if n not in _DEFAULTS)
_CHECKS = {
    "request_id": is_str,
    "correlation_id": lambda v: v is not None,
    "inputs": lambda v: is_sequence_of(v, Tensor, none_ok=True),
    "requested_output_names": lambda v: is_sequence_of(v, (str, bytes)),
    "model_name": is_str,
    "model_version": lambda v: is_int(v, 64),
    "flags": lambda v: is_int(v, 32, signed=False),
    "timeout": lambda v: is_int(v, 64, signed=False),
    "preferred_memory": lambda v: isinstance(v, PreferredMemory),
    "trace": lambda v: isinstance(v, InferenceTrace),
    "parameters": lambda v: True,
}


PyInferenceRequest = InferenceRequest  # the pure-Python implementation, in both modes


def received(reqs):
    """The requests of one `exec` message."""
    return [InferenceRequest._received(m) for m in reqs]


if NATIVE is not None:

    class InferenceRequest(NATIVE.RequestBase):
        __slots__ = ()
        # RequestBase: _received, inputs, request_id, correlation_id, requested_output_names,
        # flags, timeout, parameters, trace.
        __init__ = PyInferenceRequest.__init__
        set_flags = PyInferenceRequest.set_flags
        is_cancelled = PyInferenceRequest.is_cancelled
        get_response_sender = PyInferenceRequest.get_response_sender
        set_release_flags = PyInferenceRequest.set_release_flags
        exec = PyInferenceRequest.exec
        async_exec = PyInferenceRequest.async_exec

    register(
        request_type=InferenceRequest,
        state=STATE,
        request_slot=RequestSlot,
        request_trace=request_trace,
        no_trace=NO_TRACE,
        default_memory=DEFAULT_PREFERRED_MEMORY,
    )
    received = NATIVE.received  # noqa: F811
