"""Decoupled chunk source: N responses of BYTES bytes each (value i % 256), PACE_MS apart."""

import time

import numpy as np

import triton_python_backend_utils as pb_utils


def scalar(request, name):
    return int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n, size, pace = scalar(request, "N"), scalar(request, "BYTES"), scalar(request, "PACE_MS")
            for i in range(n):
                data = np.full((size,), i % 256, dtype=np.uint8)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("DATA", data)]))
                time.sleep(pace / 1000)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
