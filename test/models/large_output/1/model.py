"""Large-output model: OUT is INT32 [COUNT] holding 0, 1, 2, ... (mod 2^31), so a tiny request
asks for an output of any size and the client can check every element it gets back."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "COUNT").as_numpy()[0])
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.arange(n, dtype=np.int32))]))
        return out
