"""A Python-based backend in the manner of Triton's QA `add_sub` backend: served for every model
whose config says `backend: "add_sub"`, with the operation read from the model's own
`<version>/model.json` (as the vLLM backend reads its engine arguments). Its inputs and outputs
come from auto_complete_config, and a sibling package (utils/) imports top-level. WHERE tells
tests what the stub saw: get_model_dir(), the initialize args, the module and the interpreter.
"""

import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils
from utils.ops import apply


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        for name in ("INPUT0", "INPUT1"):
            auto_complete_model_config.add_input({"name": name, "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.add_output({"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.add_output({"name": "WHERE", "data_type": "TYPE_STRING", "dims": [1]})
        auto_complete_model_config.set_max_batch_size(0)
        return auto_complete_model_config

    def initialize(self, args):
        with open(os.path.join(pb_utils.get_model_dir(), "model.json")) as f:
            self.operation = json.load(f)["operation"]
        self.where = json.dumps(
            {
                "model_dir": pb_utils.get_model_dir(),
                "model_repository": args["model_repository"],
                "model_version": args["model_version"],
                "model_name": args["model_name"],
                "module": __name__,
                "file": __file__,
                "prefix": sys.prefix,
            }
        )

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUTPUT", apply(self.operation, a, b)),
                        pb_utils.Tensor("WHERE", np.array([self.where], np.object_)),
                    ]
                )
            )
        return responses
