"""bls_cancel_sum from a coroutine: `await ... async_exec(decoupled=True)`, then the same consumption.

Sums stream_until_cancelled's responses, calls the iterator's cancel() twice at MAX_SUM and once
more after the stream ended; answers SUM, IS_CANCELLED and RESPONSES, or the stream's other error
(Triton's qa decoupled_bls_async_cancel).
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def scalar(request, name):
    return int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])


class TritonPythonModel:
    async def execute(self, requests):
        return [await self._one(request) for request in requests]

    async def _one(self, request):
        def passed(name):
            return pb_utils.get_input_tensor_by_name(request, name)

        delay = pb_utils.Tensor("DELAY", np.array([20], dtype=np.int32))
        call = pb_utils.InferenceRequest(
            model_name="stream_until_cancelled",
            inputs=[passed("INPUT"), passed("MAX_RESPONSE_COUNT"), delay, passed("IGNORE_CANCEL")],
            requested_output_names=["OUTPUT"],
        )
        stream = await call.async_exec(decoupled=True)
        max_sum = scalar(request, "MAX_SUM")
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
