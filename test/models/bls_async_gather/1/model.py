"""Several BLS calls in flight at once from `async def execute` (async_exec + asyncio.gather)."""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        return [await self._one(request) for request in requests]

    async def _one(self, request):
        in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
        in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
        n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
        calls = [
            pb_utils.InferenceRequest(
                model_name="add_sub",
                inputs=[pb_utils.Tensor("INPUT0", (in0 + k).astype(np.float32)), in1],
                requested_output_names=["OUTPUT0"],
            ).async_exec()
            for k in range(n)
        ]
        answers = await asyncio.gather(*calls)
        for answer in answers:
            if answer.has_error():
                return pb_utils.InferenceResponse(error=answer.error())
        rows = [pb_utils.get_output_tensor_by_name(a, "OUTPUT0").as_numpy() for a in answers]
        return pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.stack(rows))])
