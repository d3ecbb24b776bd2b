"""Request parameters probe: answers PARAMS = request.parameters(), the JSON text the model gets
(custom parameters from the request body and, with a header forward pattern, headers)."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("PARAMS", np.array([r.parameters()], dtype=np.object_))])
            for r in requests
        ]
