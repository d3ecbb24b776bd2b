"""Sleeps MS milliseconds, then answers OUT = MS."""

import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            ms = pb_utils.get_input_tensor_by_name(request, "MS").as_numpy()
            time.sleep(int(ms.reshape(-1)[0]) / 1000)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", ms)]))
        return out
