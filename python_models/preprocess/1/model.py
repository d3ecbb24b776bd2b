"""RAW (UINT8 [n, 16]) → FEATURES (FP32 [n, 16]): scale to [0, 1], then standardise per row.

The output feeds the `simple_onnx` model (see config.pbtxt for the client flow).
"""
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "RAW").as_numpy()
            x = raw.astype(np.float32) / 255.0
            mean = x.mean(axis=1, keepdims=True)
            std = x.std(axis=1, keepdims=True)
            # A constant row has no spread; keep it at zero instead of dividing by zero.
            features = (x - mean) / np.where(std > 1e-6, std, 1.0)
            out = pb_utils.Tensor("FEATURES", features.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
