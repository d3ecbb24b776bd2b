"""SUM = A + B; START is time.monotonic_ns() when the execution began."""

import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            start = time.monotonic_ns()
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("SUM", (a + b).astype(np.float32)), pb_utils.Tensor("START", np.array([start], dtype=np.int64))]
                )
            )
        return responses
