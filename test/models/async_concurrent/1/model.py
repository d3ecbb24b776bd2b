"""Sleeps MS milliseconds per request on the stub's event loop (see config.pbtxt).

MS < 0 raises, so the whole batch fails. A cancelled request is answered with CANCELLED and
logged. PEAK counts executions in flight at once: above 1 only when the instance runs its
coroutines concurrently.
"""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.running = 0
        self.peak = 0

    async def execute(self, requests):
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            responses = []
            for request in requests:
                ms = int(pb_utils.get_input_tensor_by_name(request, "MS").as_numpy().reshape(-1)[0])
                if ms < 0:
                    raise ValueError("negative sleep")
                waited = 0
                while waited < ms and not request.is_cancelled():
                    await asyncio.sleep(0.01)
                    waited += 10
                if request.is_cancelled():
                    print(f"async_concurrent: cancelled after {waited} ms", flush=True)
                    error = pb_utils.TritonError("cancelled by the client", pb_utils.TritonError.CANCELLED)
                    responses.append(pb_utils.InferenceResponse(error=error))
                    continue
                outputs = [
                    pb_utils.Tensor("OUT", np.array([ms], np.int32)),
                    pb_utils.Tensor("PEAK", np.array([self.peak], np.int32)),
                ]
                responses.append(pb_utils.InferenceResponse(outputs))
            return responses
        finally:
            self.running -= 1
