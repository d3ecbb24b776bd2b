"""What `execute` returned -> the `resps` of exec_done (docs/protocol-notes.md, "What execute returns").

Batch-level problems raise StubError with Triton's exact text; the caller wraps it in
"Failed to process the request(s) ..." exactly as Triton's stub does for every batch error.
"""

from .errors import TritonError, TritonModelException
from .loader import StubError
from .logger import emit
from .response import InferenceResponse
from .response_sender import FINAL, SENDER_LOCK
from .state import STATE
from .tensor_codec import encode_response, free_blocks

RELEASE_RESCHEDULE = 2


def _check(requests, returned):
    """Validates what execute returned, counts each returned response as its request's FINAL,
    and closes the slot of every rescheduled request; returns the indexes of those (one pass,
    under SENDER_LOCK once: this runs for every batch)."""
    if STATE.decoupled:
        raise StubError(
            f"Python model '{STATE.name}' is using the decoupled mode and the execute function must return None."
        )
    _check_list(requests, returned)
    again = None
    with SENDER_LOCK:
        for i, response in enumerate(returned):
            request = requests[i]
            if request._release_flags == RELEASE_RESCHEDULE:
                if response is not None:
                    raise StubError(
                        "Expected a None object in the execute function return list "
                        f"for reschduled request, found type '{type(response)}'."
                    )
                # See _close_rescheduled. Closed before a later response fails a check: the
                # batch then fails and every request is closed anyway.
                request._slot.closed = True
                if again is None:
                    again = [i]
                else:
                    again.append(i)
                continue
            if response is None:
                continue
            if not isinstance(response, InferenceResponse):
                raise StubError(
                    "Expected an 'InferenceResponse' object in the execute "
                    f"function return list, found type '{type(response)}'."
                )
            # A returned response is the request's FINAL: same rules as a sender FINAL
            # (e.g. the request was already closed through its sender).
            try:
                request._slot.check_and_count(True, FINAL)
            except TritonModelException as e:
                raise StubError(str(e)) from None
    return again


def _check_list(requests, returned):
    if not isinstance(returned, list):
        raise StubError(f"Expected a list in the execute return, found type '{type(returned)}'.")
    if len(returned) != len(requests):
        raise StubError(
            "Number of InferenceResponse objects do not match the number of InferenceRequest "
            f"objects. InferenceRequest(s) size is:{len(requests)}, and InferenceResponse(s) "
            f"size is:{len(returned)}\n"
        )


def _close_rescheduled(requests):
    """A rescheduled request's execution is over: Node re-queues the request (iterative
    sequences, which run it again under a new slot) or fails it. Close this execution's slot so
    that dropping the request object sends no FINAL notice and a later send through its old
    sender raises. Every other request without a returned response stays open: its sender may
    still answer after execute returned (from another thread), and a request dropped without
    FINAL is closed by RequestSlot.__del__. Returns the indexes of the rescheduled requests."""
    again = None
    with SENDER_LOCK:
        for i, request in enumerate(requests):
            if request._release_flags == RELEASE_RESCHEDULE:
                request._slot.closed = True
                if again is None:
                    again = [i]
                else:
                    again.append(i)
    return again


def build_resps(channel, requests, returned):
    """Validate the return value and write the responses' outputs into shared memory: the
    `resps` of exec_done, and the indexes of rescheduled requests (None when there are none)."""
    if returned is None:
        return [None] * len(requests), _close_rescheduled(requests)
    again = _check(requests, returned)
    blocks = []
    try:
        resps = [
            None if response is None else encode_response(channel, response, request._slot.requested, blocks)
            for request, response in zip(requests, returned)
        ]
    except BaseException:
        free_blocks(channel, blocks)
        raise
    return resps, again


def answer_later(requests, returned, exc, error_text):
    """The answers of a non-decoupled coroutine that ran concurrently (async_loop): its batch's
    exec_done went out when it was scheduled, so each request is answered through its response
    sender, with the checks build_resps makes; a failure answers every request still open with
    Triton's batch error text (`error_text(exception)`)."""
    try:
        if exc is not None:
            raise exc
        if returned is None:
            return  # answered through the senders already, or left open for them
        _check_list(requests, returned)
        for request, response in zip(requests, returned):
            if response is not None:
                request.get_response_sender().send(response, flags=FINAL)
    except (Exception, SystemExit) as e:
        text = f"Failed to process the request(s) for model '{STATE.name}', message: {error_text(e)}"
        emit("ERROR", text, "result.py", 0)
        for request in requests:
            if request._slot.closed:
                continue
            try:
                request.get_response_sender().send(InferenceResponse(error=TritonError(text)), flags=FINAL)
            except TritonModelException:
                pass
