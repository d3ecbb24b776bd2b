"""A BLS model: each request is answered by calling the add_sub model from here.

The request's inputs are passed on unchanged, and add_sub's outputs become this model's. An
error from add_sub (or add_sub not being loaded) comes back as the error of this request
instead of an exception: a BLS response carries errors, it does not raise them.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            call = pb_utils.InferenceRequest(
                model_name="add_sub",
                inputs=[
                    pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                    pb_utils.get_input_tensor_by_name(request, "INPUT1"),
                ],
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                # When this request is traced, the call is traced too, as its child.
                trace=request.trace(),
            )
            answer = call.exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(error=answer.error()))
            else:
                responses.append(pb_utils.InferenceResponse(output_tensors=answer.output_tensors()))
        return responses
