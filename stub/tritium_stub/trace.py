"""pb_utils InferenceTrace: the trace context a request carries (none yet in tritium)."""


class InferenceTrace:
    __slots__ = ("_context",)

    def __init__(self, context=None):
        self._context = context or None

    def get_context(self):
        return self._context


NO_TRACE = InferenceTrace()
