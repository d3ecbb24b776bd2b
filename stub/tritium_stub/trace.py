"""pb_utils InferenceTrace: the trace a request carries.

In Triton mode its context is None (`get_context()`, as in Triton, whose context is
OpenTelemetry's). A request that Node traces carries its rid here, so that a BLS request built
with `trace=request.trace()` is traced as that request's child (docs/protocol-notes.md, "Trace").
"""


class InferenceTrace:
    __slots__ = ("_context", "_rid")

    def __init__(self, context=None):
        self._context = context or None
        self._rid = None

    def get_context(self):
        return self._context


def request_trace(rid):
    """The trace of received request `rid`, which Node traces."""
    t = InferenceTrace()
    t._rid = rid
    return t


NO_TRACE = InferenceTrace()
