"""Classification labels: OUT is IN unchanged, so a test picks the scores; labels.txt in the
model directory names classes 0, 1 and 3 (class 2's line is empty)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())])
            for r in requests
        ]
