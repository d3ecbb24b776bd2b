# Echoes every input it receives as OUT_<type>. BF16 has no numpy type: as_numpy() raises
# Triton's documented error, which this model returns as the response error so tests see it.
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            outputs = []
            error = None
            for tensor in request.inputs():
                try:
                    outputs.append(pb_utils.Tensor("OUT_" + tensor.name()[3:], tensor.as_numpy()))
                except pb_utils.TritonModelException as e:
                    error = pb_utils.TritonError(str(e), pb_utils.TritonError.INVALID_ARG)
            responses.append(pb_utils.InferenceResponse(outputs, error))
        return responses
