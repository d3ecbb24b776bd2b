"""BLS (`InferenceRequest.exec`): not wired to Node yet, but with Triton's availability rule."""

from .errors import TritonError, TritonModelException
from .response import InferenceResponse
from .state import STATE


class ResponseIterator:
    """What `exec(decoupled=True)` returns: iterates the responses of one BLS call.

    Iterating again replays the responses from the start, as in Triton.
    """

    def __init__(self, responses):
        self._responses = list(responses)
        self._pos = 0

    def __iter__(self):
        self._pos = 0
        return self

    def __next__(self):
        if self._pos >= len(self._responses):
            raise StopIteration
        self._pos += 1
        return self._responses[self._pos - 1]

    def cancel(self):
        pass


def bls_exec(request, decoupled):
    # Triton allows BLS from initialize()'s end to finalize(): execute and the threads it starts.
    if not STATE.initialized or STATE.finalizing:
        raise TritonModelException("BLS is only supported during the 'execute' function.")
    response = InferenceResponse(error=TritonError("BLS is not supported by tritium yet", TritonError.UNSUPPORTED))
    return ResponseIterator([response]) if decoupled else response
