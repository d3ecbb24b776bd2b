"""Counts its coroutines that are inside a BLS call at once.

Each request: `await async_exec(decoupled=True)` on async_sleep_decoupled (which waits WAIT_MS),
iterate the responses, then answer with FINAL: MOST_IN_FLIGHT (the most requests of this instance
seen between starting and finishing their call so far) and START / END (time.monotonic_ns()
around the call). The counters live on the stub's event loop thread, so they need no lock.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def initialize(self, args):
        self.in_flight = 0
        self.most = 0

    async def execute(self, requests):
        for request in requests:
            await self._one(request)
        return None

    async def _one(self, request):
        sender = request.get_response_sender()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        start = time.monotonic_ns()
        try:
            call = pb_utils.InferenceRequest(
                model_name="async_sleep_decoupled",
                inputs=[pb_utils.get_input_tensor_by_name(request, "WAIT_MS")],
                requested_output_names=["OUT"],
            )
            for response in await call.async_exec(decoupled=True):
                if response.has_error():
                    sender.send(pb_utils.InferenceResponse(error=response.error()), flags=FINAL)
                    return
        finally:
            self.in_flight -= 1
        end = time.monotonic_ns()
        outputs = [
            pb_utils.Tensor("MOST_IN_FLIGHT", np.array([self.most], dtype=np.int32)),
            pb_utils.Tensor("START", np.array([start], dtype=np.int64)),
            pb_utils.Tensor("END", np.array([end], dtype=np.int64)),
        ]
        sender.send(pb_utils.InferenceResponse(outputs), flags=FINAL)
