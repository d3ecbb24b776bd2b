"""RAW (UINT8 [n, 16]) → LABEL, CONFIDENCE through preprocess → simple_onnx → postprocess,
called with BLS: the `classify_pipeline` ensemble as code. Each call goes through the called
model's scheduler (and dynamic batcher) like a client request would."""

import triton_python_backend_utils as pb_utils


def call(model, inputs, outputs):
    response = pb_utils.InferenceRequest(model_name=model, inputs=inputs, requested_output_names=outputs).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(response.error().message())
    return [pb_utils.get_output_tensor_by_name(response, name) for name in outputs]


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "RAW")
            (features,) = call("preprocess", [raw], ["FEATURES"])
            probabilities, cls = call("simple_onnx", [features], ["PROBABILITIES", "CLASS"])
            label, confidence = call("postprocess", [probabilities, cls], ["LABEL", "CONFIDENCE"])
            responses.append(pb_utils.InferenceResponse([label, confidence]))
        return responses
