"""Decoupled counter: for input N, sends N responses with VALUE = 1..N, then FINAL alone."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy().reshape(-1)[0])
            for i in range(1, n + 1):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("VALUE", np.array([i], dtype=np.float32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
