"""Cancels a decoupled BLS stream from `exec(decoupled=True)` once the sum of its responses reaches MAX_SUM.

Calls stream_until_cancelled (OUTPUT = INPUT every 20 ms, at most MAX_RESPONSE_COUNT, IGNORE_CANCEL
passed on) and adds up OUTPUT. At MAX_SUM it calls the iterator's cancel() twice (the second must
be a no-op) and keeps iterating: a target that honours the cancellation ends the stream with a
CANCELLED error, one that ignores it keeps sending until its own FINAL. After the stream ended,
cancel() once more must do nothing. Answers SUM, IS_CANCELLED (the stream ended with CANCELLED)
and RESPONSES (items the iterator yielded); any other error of the stream, or cancel() raising,
is the answer's error. Triton's qa decoupled_bls_cancel and decoupled_bls_cancel_after_complete.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def stream_request(request):
    def passed(name):
        return pb_utils.get_input_tensor_by_name(request, name)

    delay = pb_utils.Tensor("DELAY", np.array([20], dtype=np.int32))
    return pb_utils.InferenceRequest(
        model_name="stream_until_cancelled",
        inputs=[passed("INPUT"), passed("MAX_RESPONSE_COUNT"), delay, passed("IGNORE_CANCEL")],
        requested_output_names=["OUTPUT"],
    )


def consume(request, stream):
    """Sums the stream, cancelling it at MAX_SUM; the answer to the client."""
    max_sum = int(pb_utils.get_input_tensor_by_name(request, "MAX_SUM").as_numpy().reshape(-1)[0])
    total, count, is_cancelled, error = 0, 0, False, None
    for response in stream:
        count += 1
        if response.has_error():
            if response.error().code() == pb_utils.TritonError.CANCELLED:
                is_cancelled = True
            else:
                error = response.error()
            break
        out = pb_utils.get_output_tensor_by_name(response, "OUTPUT")
        if out is None:  # the flags-only FINAL
            continue
        total += int(out.as_numpy()[0])
        if total >= max_sum:
            stream.cancel()
            stream.cancel()
    if error is None:
        try:
            stream.cancel()  # the stream is over: nothing happens
        except Exception as e:
            error = pb_utils.TritonError(f"cancel() after the end raised {type(e).__name__}: {e}")
    outputs = [
        pb_utils.Tensor("SUM", np.array([total], dtype=np.int32)),
        pb_utils.Tensor("IS_CANCELLED", np.array([is_cancelled], dtype=np.bool_)),
        pb_utils.Tensor("RESPONSES", np.array([count], dtype=np.int32)),
    ]
    return pb_utils.InferenceResponse(outputs, error)


class TritonPythonModel:
    def execute(self, requests):
        return [consume(request, stream_request(request).exec(decoupled=True)) for request in requests]
