"""Errors the way models report them.

* INPUT0 < 0                    -> that request gets an INVALID_ARG error response
* request parameter "raise": true -> execute raises (every request of the batch fails)
* otherwise                     -> OUTPUT0 = INPUT0
"""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            if json.loads(request.parameters()).get("raise", False):
                raise pb_utils.TritonModelException("Intentional Error")
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if (value < 0).any():
                error = pb_utils.TritonError("INPUT0 must not be negative",
                                             pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
            else:
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", value)]))
        return responses
