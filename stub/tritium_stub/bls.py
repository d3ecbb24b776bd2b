"""BLS: `InferenceRequest.exec()` / `exec(decoupled=True)` / `async_exec()` (docs/ipc.md, "Calls
from the model").

A call writes its inputs once into the stub's output arena and sends `bls`; Node runs it through
the server's core and answers with `bls_r` messages whose outputs it copied once into its own
arena. Outputs become numpy views over that memory; when the model drops the last reference to
one, its block is handed back to Node (`bls_free`). The stub frees its input blocks when the
final answer arrives: Node no longer reads them after it.
"""

import collections
import itertools
import weakref

from .errors import TritonError, TritonModelException
from .messages import BLS, BLS_CANCEL, BLS_FREE
from .pybind_args import as_str
from .response import InferenceResponse
from .state import STATE
from .tensor import Tensor
from .tensor_codec import block_array, free_blocks, write_tensor

_ONLY_EXECUTE = "BLS is only supported during the 'execute' function."

_ids = itertools.count(1)
# bid -> _Call. Answers are routed (get, pop) under the inbox's condition; a call is added
# without it, before its message is sent: no answer for it can be routed earlier, and one dict
# store is atomic under the GIL.
_calls = {}
# (segment, offset) of Node's blocks the model no longer references; appended from finalizers.
_freed = collections.deque()


class _Call:
    __slots__ = ("bid", "answers", "blocks", "finished", "abandoned", "cancelled")

    def __init__(self, bid, blocks):
        self.bid = bid
        self.answers = collections.deque()  # (resp wire map or None, final)
        self.blocks = blocks  # the stub's input blocks, freed at the final answer
        self.finished = False  # the final answer arrived
        self.abandoned = False  # the caller stopped listening (iterator dropped)
        self.cancelled = False  # the model called the iterator's cancel()


def route_answer(msg):
    """A `bls_r` from Node; called by the inbox with its condition held."""
    call = _calls.get(msg["bid"])
    resp = msg.get("resp")
    final = bool(msg.get("final"))
    if call is None or call.abandoned:
        if resp is not None:
            _drop_outputs(resp)
    else:
        call.answers.append((resp, final))
    if final and call is not None:
        call.finished = True
        _calls.pop(call.bid, None)
        free_blocks(STATE.channel, call.blocks)
        call.blocks = []


def _drop_outputs(resp):
    for d in resp.get("outs") or ():
        if d[5]:
            _freed.append((d[3], d[4]))


def flush_freed():
    """Hands Node the output blocks models dropped since the last flush (one message)."""
    if not _freed or STATE.channel is None:
        return
    blocks = []
    try:
        while True:
            seg, off = _freed.popleft()
            blocks.append([seg, off])
    except IndexError:
        pass
    STATE.channel.send({"t": BLS_FREE, "blocks": blocks})


# id(weak reference) -> (the reference, its block): keeps each reference alive until its array dies.
_watched = {}


def _block_dropped(ref):
    _freed.append(_watched.pop(id(ref))[1])


def _view_output(channel, desc):
    name, dtype, shape, segment, offset, nbytes = desc
    array, owner = block_array(channel, dtype, shape, segment, offset, nbytes)
    if owner is not None:
        # Views of `owner` keep it alive (numpy stops collapsing bases at the memoryview), so
        # the block goes back to Node only when no array over it remains. A bare weak reference
        # with a callback (kept in _watched until it fires) costs a fraction of weakref.finalize.
        ref = weakref.ref(owner, _block_dropped)
        _watched[id(ref)] = (ref, (segment, offset))
    elif nbytes:
        _freed.append((segment, offset))  # parsed into Python bytes: the block is not needed
    return Tensor._wrap(name, dtype, array)


def _response(resp):
    """An InferenceResponse from an answer's wire map; None (a flags-only FINAL) -> empty."""
    if resp is None:
        return InferenceResponse._wrap([], None, None)
    err = resp.get("err")
    if err:
        _drop_outputs(resp)
        return InferenceResponse(error=TritonError(err[1], type(TritonError.INTERNAL)(err[0])))
    outs = resp.get("outs")
    channel = STATE.channel
    return InferenceResponse._wrap([_view_output(channel, d) for d in outs] if outs else [], None, resp.get("params"))


def _start(request, decoupled):
    if not STATE.initialized or STATE.finalizing or STATE.inbox is None:
        raise TritonModelException(_ONLY_EXECUTE)
    channel = STATE.channel
    if _freed:
        flush_freed()
    blocks = []
    try:
        inputs = [write_tensor(channel, t, blocks) for t in request._inputs]
    except BaseException:
        free_blocks(channel, blocks)
        raise
    bid = next(_ids)
    call = _calls[bid] = _Call(bid, blocks)
    msg = {"t": BLS, "bid": bid, "model": request._model_name, "ver": request._model_version}
    msg["id"] = request._request_id
    msg["corr"] = request._correlation_id
    msg["flags"] = request._flags
    msg["timeout"] = request._timeout
    msg["params"] = request._params or "{}"
    msg["outs"] = [n if type(n) is str else as_str(n) for n in request._requested]
    msg["inputs"] = inputs
    msg["dec"] = decoupled
    msg["rids"] = [r["rid"] for r in STATE.running_reqs]
    rid = request._trace._rid
    if rid is not None:
        msg["tr"] = rid
    try:
        channel.send(msg)
    except BaseException:
        _calls.pop(bid, None)
        free_blocks(channel, blocks)
        raise
    return call


def bls_exec(request, decoupled):
    """exec(): one response (non-decoupled) or an iterator over the responses (decoupled)."""
    call = _start(request, decoupled)
    if decoupled:
        # Triton returns the iterator once the first response is in (its ResponseIterator is
        # built from it). That is what lets `await async_exec(decoupled=True)` wait in an
        # executor thread: were the wait left to the iterator, a coroutine iterating it would
        # block the event loop, and with it every other coroutine of the instance.
        STATE.inbox.wait_for(lambda: len(call.answers) > 0)
        return ResponseIterator(call)
    STATE.inbox.wait_for(lambda: call.finished)
    answers = call.answers
    last = None
    for resp, _final in answers:
        if resp is not None:
            if last is not None:  # only the last response is the call's answer
                _drop_outputs(last)
            last = resp
    answers.clear()
    return _response(last)


class ResponseIterator:
    """What `exec(decoupled=True)` returns: the responses of one BLS call as they arrive.

    A FINAL without a response is yielded as an empty response, as in Triton; iterating again
    after the end replays the responses from the start.
    """

    def __init__(self, call):
        self._call = call
        self._seen = []
        self._pos = 0
        self._done = False

    def __iter__(self):
        # As Triton's Iter(): a finished stream replays from the start, an unfinished one
        # resumes where the model left it (`first = next(it)` then `for r in it`).
        if self._done and self._pos >= len(self._seen):
            self._pos = 0
        return self

    def __next__(self):
        if self._pos < len(self._seen):
            self._pos += 1
            return self._seen[self._pos - 1]
        if self._done:
            raise StopIteration
        call = self._call
        inbox = STATE.inbox
        inbox.wait_for(lambda: len(call.answers) > 0)
        with inbox.cond:
            resp, final = call.answers.popleft()
        if final:
            self._done = True
        response = _response(resp)
        self._seen.append(response)
        self._pos += 1
        return response

    def cancel(self):
        """Asks the server to cancel the call, as Triton's iterator does: the target sees
        is_cancelled() and decides (it usually ends the stream with a CANCELLED error; one that
        ignores it streams on to its FINAL, which this iterator still yields). Nothing happens
        once the call finished, and a second cancel() sends nothing (a cancelled request stays
        cancelled)."""
        call = self._call
        if call.finished or call.cancelled or STATE.channel is None:
            return
        call.cancelled = True
        STATE.channel.send({"t": BLS_CANCEL, "bid": call.bid})

    def __del__(self):
        # Responses nobody will read: their outputs go back to Node now or when they arrive.
        call = self._call
        inbox = STATE.inbox
        if inbox is None or call.finished and not call.answers:
            return
        with inbox.cond:
            call.abandoned = True
            while call.answers:
                resp, _final = call.answers.popleft()
                if resp is not None:
                    _drop_outputs(resp)
