"""Undeclared output: every response holds NOT_DECLARED (a copy of IN), a name the config does
not declare; when IN[0] == 1 it also holds the declared OUTPUT0 (IN + 1)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            tensors = [pb_utils.Tensor("NOT_DECLARED", x)]
            if x.size and x[0] == 1:
                tensors.append(pb_utils.Tensor("OUTPUT0", (x + 1).astype(np.int32)))
            out.append(pb_utils.InferenceResponse(tensors))
        return out
