"""InferenceResponseSender rules, checked locally with Triton's texts (docs/protocol-notes.md, "Response sender")."""

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from tritium_stub.request import InferenceRequest

TME = pb_utils.TritonModelException
FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


@pytest.fixture
def make_sender(channel, fresh_state):
    from conftest import make_request

    def make(decoupled=False, outs=("OUTPUT0",), config_outputs=("OUTPUT0", "OUTPUT1")):
        fresh_state.decoupled = decoupled
        fresh_state.config_outputs = frozenset(config_outputs)
        request = InferenceRequest._received(make_request(channel, 9, outs=outs))
        return request, request.get_response_sender()

    return make


def test_same_sender_every_call(make_sender):
    request, sender = make_sender()
    assert request.get_response_sender() is sender


def test_flag_and_argument_rules(make_sender):
    _, sender = make_sender(decoupled=True)
    with pytest.raises(TME, match="^Unable to send response. Unsupported flag provided.$"):
        sender.send(pb_utils.InferenceResponse(), flags=4)
    with pytest.raises(
        TME, match="^Inference Response object must be provided when the response flags is set to zero.$"
    ):
        sender.send()
    with pytest.raises(TypeError):
        sender.send("not a response")


def test_non_decoupled_rules(make_sender, channel):
    _, sender = make_sender()
    with pytest.raises(
        TME,
        match="^Unable to send response. Non-decoupled model cannot send complete final before sending a response.$",
    ):
        sender.send(flags=FINAL)
    sender.send(pb_utils.InferenceResponse())
    with pytest.raises(TME, match="^Unable to send response. Non-decoupled model cannot send more than one response.$"):
        sender.send(pb_utils.InferenceResponse())
    sender.send(flags=FINAL)
    with pytest.raises(TME, match="^Unable to send response. Response sender has been closed.$"):
        sender.send(flags=FINAL)
    assert [(m["rid"], m["flags"]) for m in channel.of_type("send")] == [(9, 0), (9, 1)]


def test_non_decoupled_response_after_final_says_more_than_one(make_sender, channel):
    # Triton 2.51 checks the one-response rule before the closed state (compared on it).
    _, sender = make_sender()
    sender.send(pb_utils.InferenceResponse(), flags=FINAL)
    with pytest.raises(TME, match="^Unable to send response. Non-decoupled model cannot send more than one response.$"):
        sender.send(pb_utils.InferenceResponse())
    with pytest.raises(TME, match="^Unable to send response. Response sender has been closed.$"):
        sender.send(flags=FINAL)
    assert [m["flags"] for m in channel.of_type("send")] == [1]


def test_decoupled_sends_many_then_closes(make_sender, channel):
    _, sender = make_sender(decoupled=True)
    for _ in range(3):
        sender.send(pb_utils.InferenceResponse())
    sender.send(pb_utils.InferenceResponse(), flags=FINAL)
    with pytest.raises(TME, match="Response sender has been closed."):
        sender.send(pb_utils.InferenceResponse())
    assert [m["flags"] for m in channel.of_type("send")] == [0, 0, 0, 1]


def test_outputs_pruned_and_checked_against_config(make_sender, channel):
    _, sender = make_sender(decoupled=True, outs=("OUTPUT0", "EXTRA"))
    t = pb_utils.Tensor
    sender.send(
        pb_utils.InferenceResponse([t("OUTPUT0", np.ones(2, np.float32)), t("OUTPUT1", np.ones(1, np.float32))])
    )
    outs = channel.of_type("send")[-1]["resp"]["outs"]
    assert [d[0] for d in outs] == ["OUTPUT0"]
    blocks_before = dict(channel.blocks)
    with pytest.raises(TME, match="'EXTRA' is not an output of model"):
        sender.send(pb_utils.InferenceResponse([t("EXTRA", np.ones(1, np.float32))]))
    assert channel.blocks == blocks_before


def test_error_response_and_cancellation(make_sender, channel):
    request, sender = make_sender(decoupled=True)
    assert not request.is_cancelled() and not sender.is_cancelled()
    seg, off = request._slot.cflag
    channel.segments[seg][off] = 1  # Node flips the word when the client cancels
    assert request.is_cancelled() and sender.is_cancelled()
    sender.send(
        pb_utils.InferenceResponse(error=pb_utils.TritonError("no", pb_utils.TritonError.CANCELLED)), flags=FINAL
    )
    assert channel.of_type("send")[-1]["resp"] == {"outs": [], "err": [7, "no"]}
    # Closed: Node frees the word, so it is no longer read; the last answer stands.
    channel.segments[seg][off] = 0
    assert request.is_cancelled() and sender.is_cancelled()


def test_closed_request_does_not_read_the_freed_cancel_word(make_sender, channel):
    request, sender = make_sender(decoupled=True)
    sender.send(flags=FINAL)
    seg, off = request._slot.cflag
    channel.segments[seg][off] = 1  # the freed word now belongs to someone else
    assert not request.is_cancelled() and not sender.is_cancelled()


def test_failed_send_frees_nothing_twice(make_sender, channel):
    _, sender = make_sender()
    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.ones(1))]), flags=FINAL)
    live = len(channel.blocks)
    with pytest.raises(TME):
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.ones(1))]))
    assert len(channel.blocks) == live  # the rejected response's block was freed
