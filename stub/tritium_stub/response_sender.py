"""InferenceResponseSender and the per-request state it shares with the request.

Every rule of Triton's sender is checked here, in the stub, so `send()` is one push onto the
ring and needs no answer from Node (docs/ipc.md explains why a round trip would deadlock).
"""

import threading

from .errors import TritonModelException
from .messages import SEND
from .pybind_args import MODULE, bind, is_int, mismatch
from .response import InferenceResponse
from .state import STATE
from .tensor_codec import encode_response, free_blocks

FINAL = 1  # TRITONSERVER_RESPONSE_COMPLETE_FINAL

# One lock for every request's sender state: transitions are rare and tiny, and holding it
# across the ring push keeps the order of `send` messages equal to the order of the checks.
SENDER_LOCK = threading.Lock()

_CLOSED = "Unable to send response. Response sender has been closed."
_MORE_THAN_ONE = "Unable to send response. Non-decoupled model cannot send more than one response."
_FINAL_FIRST = "Unable to send response. Non-decoupled model cannot send complete final before sending a response."


class RequestSlot:
    """What the stub knows about one request Node handed over: id, outputs, sender state."""

    __slots__ = ("rid", "requested", "cflag", "_cview", "_cancelled", "closed", "sent")

    def __init__(self, rid, requested, cflag):
        self.rid = rid
        self.requested = requested  # list of requested output names (pruning)
        self.cflag = cflag  # [segment, offset] of the cancellation word, or None
        self._cview = None
        self._cancelled = False
        self.closed = False
        self.sent = 0

    def is_cancelled(self):
        # Node sets the 4-byte word to 1 when the client goes away; no IPC round trip.
        # Once the request is closed Node frees the word (and may reuse its memory), so a
        # closed request answers with what was last seen instead of reading it.
        if self.cflag is None or self._cancelled or self.closed:
            return self._cancelled
        view = self._cview
        if view is None:
            view = self._cview = STATE.channel.tensor_view(self.cflag[0], self.cflag[1], 4)
        self._cancelled = int.from_bytes(view, "little") != 0
        return self._cancelled

    def check_and_count(self, has_response, flags):
        """Apply Triton's sender rules for one send; call with SENDER_LOCK held."""
        # Triton checks the non-decoupled rules before the closed state: a second response
        # after a FINAL one raises "more than one response", a second FINAL "closed".
        if not STATE.decoupled:
            if has_response and self.sent > 0:
                raise TritonModelException(_MORE_THAN_ONE)
            if not has_response and flags == FINAL and self.sent == 0:
                raise TritonModelException(_FINAL_FIRST)
        if self.closed:
            raise TritonModelException(_CLOSED)
        if flags == FINAL:
            self.closed = True
        self.sent += 1

    def __del__(self):
        # Beyond Triton (which leaves the client waiting): the model dropped the request and its
        # sender without FINAL, so nothing can answer it any more. Non-decoupled requests stay
        # open after execute returns (a thread may still answer), so this is where they end too.
        if self.closed or STATE.finalizing or STATE.channel is None:
            return
        if not STATE.decoupled and self.sent > 0:
            # Its one response is already with Node: deliver it rather than an error.
            resp = None
        else:
            resp = {
                "outs": [],
                "err": [
                    1,
                    f"Python model '{STATE.name}' released the request without sending a response with the FINAL flag.",
                ],
            }
        try:
            STATE.channel.send({"t": SEND, "rid": self.rid, "flags": FINAL, "resp": resp})
        except Exception:
            pass


def close_all(slots):
    with SENDER_LOCK:
        for slot in slots:
            slot.closed = True


class InferenceResponseSender:
    __slots__ = ("_slot",)

    def __init__(self, slot):
        self._slot = slot

    def send(self, *args, **kwargs):
        a = bind(("response", "flags"), {"response": None, "flags": 0}, args, kwargs)
        if (
            a is None
            or not is_int(a["flags"], 32, signed=False)
            or not (a["response"] is None or isinstance(a["response"], InferenceResponse))
        ):
            raise mismatch("send", _SEND_SIGNATURE, (self,) + args, kwargs)
        response, flags = a["response"], int(a["flags"])
        if flags != FINAL and flags != 0:
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        slot = self._slot
        channel = STATE.channel
        blocks = []
        payload = None
        if response is not None:
            _check_config_outputs(response, slot.requested)
            payload = encode_response(channel, response, slot.requested, blocks)
        with SENDER_LOCK:
            try:
                slot.check_and_count(response is not None, flags)
            except TritonModelException:
                free_blocks(channel, blocks)
                raise
            channel.send({"t": SEND, "rid": slot.rid, "flags": flags, "resp": payload})

    def is_cancelled(self):
        return self._slot.is_cancelled()


_SEND_SIGNATURE = (
    f"(self: {MODULE}.InferenceResponseSender, response: {MODULE}.InferenceResponse = None, flags: int = 0) -> None"
)


def _check_config_outputs(response, requested):
    # Outputs are pruned to the requested names first (Triton does the same), so only a name
    # that is requested yet absent from the config can fail here.
    if response._error is not None:
        return
    outputs = STATE.config_outputs
    for t in response._outputs:
        if t._name in requested and t._name not in outputs:
            raise TritonModelException(
                f"Unable to send response. Output '{t._name}' is not an output of model "
                f"'{STATE.name}' in its configuration."
            )
