import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        mode = pb_utils.get_input_tensor_by_name(requests[0], "MODE").as_numpy()[0].decode()
        ok = pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([7], dtype=np.int32))])
        if mode == "raise":
            raise ValueError("intentional failure")
        if mode == "not_dlpack":
            pb_utils.Tensor.from_dlpack("OUT", None)  # raises TritonModelException
        if mode == "tuple":
            return tuple(ok for _ in requests)
        if mode == "wrong_count":
            return [ok for _ in requests] + [ok]
        if mode == "wrong_type":
            return ["not a response" for _ in requests]
        if mode == "none":
            return None
        if mode == "sender":
            for r in requests:
                r.get_response_sender().send(ok, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        if mode == "error":
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError("bad input", pb_utils.TritonError.INVALID_ARG)) for _ in requests]
        return [ok for _ in requests]
