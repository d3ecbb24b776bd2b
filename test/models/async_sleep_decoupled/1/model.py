"""Decoupled coroutine: awaits asyncio.sleep(WAIT_MS), then sends OUT = WAIT_MS with FINAL."""

import asyncio

import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    async def execute(self, requests):
        await asyncio.gather(*(self._one(request) for request in requests))
        return None

    async def _one(self, request):
        wait = pb_utils.get_input_tensor_by_name(request, "WAIT_MS")
        await asyncio.sleep(int(wait.as_numpy().reshape(-1)[0]) / 1000.0)
        response = pb_utils.InferenceResponse([pb_utils.Tensor("OUT", wait.as_numpy())])
        request.get_response_sender().send(response, flags=FINAL)
