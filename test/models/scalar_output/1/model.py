"""Scalar output: OUT is a 0-d INT32 array (numpy shape ()) holding IN[0] + 2."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            v = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(v + 2, dtype=np.int32))]))
        return out
