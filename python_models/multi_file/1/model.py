"""A model split over several files: OUTPUT0 = INPUT0 * 2 + 1."""

import helper

import triton_python_backend_utils as pb_utils

from . import helper2


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", helper2.shift(helper.scale(x)))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
