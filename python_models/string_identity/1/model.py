"""BYTES in, BYTES out: OUTPUT0 echoes INPUT0, UPPER is its upper-case UTF-8 version."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            strings = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            upper = np.array([s.decode("utf-8").upper() for s in strings.reshape(-1)],
                             dtype=np.object_).reshape(strings.shape)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", strings),
                pb_utils.Tensor("UPPER", upper),
            ]))
        return responses
