"""PROBABILITIES (FP32 [n, 3]) and CLASS (INT64 [n, 1]) → LABEL (BYTES [n, 1]) and
CONFIDENCE (FP32 [n, 1]): the class's name and its probability."""

import numpy as np
import triton_python_backend_utils as pb_utils

LABELS = np.array([b"idle", b"normal", b"fault"], dtype=np.object_)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            probs = pb_utils.get_input_tensor_by_name(request, "PROBABILITIES").as_numpy()
            cls = pb_utils.get_input_tensor_by_name(request, "CLASS").as_numpy().astype(np.int64)
            labels = LABELS[cls.reshape(-1)].reshape(-1, 1)
            confidence = np.take_along_axis(probs, cls, axis=1).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LABEL", labels), pb_utils.Tensor("CONFIDENCE", confidence)]))
        return responses
