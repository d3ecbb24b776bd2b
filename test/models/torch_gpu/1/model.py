import numpy as np
import torch
import torch.utils.dlpack
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        if args["model_instance_kind"] == "GPU":
            self.device = torch.device("cuda", int(args["model_instance_device_id"]))
        else:
            self.device = torch.device("cpu")
        self.bias = torch.full((4,), 0.5, device=self.device)

    def execute(self, requests):
        responses = []
        for request in requests:
            x = torch.from_dlpack(pb_utils.get_input_tensor_by_name(request, "INPUT0").to_dlpack()).to(self.device)
            y = x * 2 + self.bias
            where = np.array([[str(y.device)]] * y.shape[0], dtype=object)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        # Both forms Triton takes: a DLPack capsule, and an object with __dlpack__.
                        pb_utils.Tensor.from_dlpack("OUTPUT0", torch.utils.dlpack.to_dlpack(y)),
                        pb_utils.Tensor.from_dlpack("OUTPUT1", (y * 10).round().to(torch.int64)),
                        pb_utils.Tensor("DEVICE", where),
                    ]
                )
            )
        return responses
