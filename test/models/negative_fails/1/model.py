"""Pass-through that refuses negative numbers: OUT = IN, or an error response
"negative_fails refuses <IN>" when IN < 0."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if float(x.reshape(-1)[0]) < 0:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("negative_fails refuses %g" % float(x.reshape(-1)[0]))))
            else:
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)]))
        return responses
