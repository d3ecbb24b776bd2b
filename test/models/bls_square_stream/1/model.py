"""Relays a decoupled model's stream: each response of square_int32 becomes one of ours.

The iterator ends with an empty response for square_int32's flags-only FINAL, which is
skipped; an error response ends the stream with that error.
"""

import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            call = pb_utils.InferenceRequest(
                model_name="square_int32",
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN")],
                requested_output_names=["OUT"],
            )
            for answer in call.exec(decoupled=True):
                if answer.has_error():
                    sender.send(pb_utils.InferenceResponse(error=answer.error()), flags=FINAL)
                    break
                if len(answer.output_tensors()) == 0:
                    continue
                out = pb_utils.get_output_tensor_by_name(answer, "OUT")
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out.as_numpy())]))
            else:
                sender.send(flags=FINAL)
        return None
