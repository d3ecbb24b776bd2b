"""OUTPUT = 2 x INPUT; CALLS = how many requests reached this stub so far (see config.pbtxt).
An input whose first element is negative fails, so tests see that errors are not cached."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.calls = 0

    def execute(self, requests):
        responses = []
        for request in requests:
            self.calls += 1
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            if x.reshape(-1)[0] < 0:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("negative input")))
                continue
            outputs = [
                pb_utils.Tensor("OUTPUT", (2 * x).astype(np.float32)),
                pb_utils.Tensor("CALLS", np.array([self.calls], np.int64)),
            ]
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
