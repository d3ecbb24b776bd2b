"""Feature extraction for a streaming pipeline (see config.pbtxt).

Each request is one chunk of a sequence's audio. The START / END / READY / CORRID control
tensors come from the sequence batcher; this model keeps its own per-sequence state (samples
seen so far) keyed by CORRID, and hands the chunk's features to the stateful ONNX encoder with
the same correlation id and flags, so the encoder's state follows the same sequence.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def _scalar(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0].item()


def features(chunk):
    """Four numbers per chunk: mean, mean absolute value, min and max."""
    return np.array([chunk.mean(), np.abs(chunk).mean(), chunk.min(), chunk.max()], np.float32)


class TritonPythonModel:
    def initialize(self, args):
        self.samples = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            corr = _scalar(request, "CORRID")
            if _scalar(request, "START"):
                self.samples[corr] = 0
            chunk = pb_utils.get_input_tensor_by_name(request, "AUDIO").as_numpy().reshape(-1)
            self.samples[corr] = self.samples.get(corr, 0) + chunk.size
            seen = self.samples[corr]
            if _scalar(request, "END"):
                del self.samples[corr]
            reply = pb_utils.InferenceRequest(
                model_name="stream_encoder",
                requested_output_names=["ENCODED", "STEP"],
                inputs=[pb_utils.Tensor("FEATURES", features(chunk).reshape(1, 4))],
                correlation_id=request.correlation_id(),
                flags=request.flags(),
            ).exec()
            if reply.has_error():
                responses.append(pb_utils.InferenceResponse(error=reply.error()))
                continue
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("ENCODED", pb_utils.get_output_tensor_by_name(reply, "ENCODED").as_numpy()),
                        pb_utils.Tensor("STEP", pb_utils.get_output_tensor_by_name(reply, "STEP").as_numpy()),
                        pb_utils.Tensor("SAMPLES", np.array([[seen]], np.int64)),
                    ]
                )
            )
        return responses
