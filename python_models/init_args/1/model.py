"""Answers every request with the 7 `initialize` args, as one JSON string in output ARGS."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args_json = json.dumps(args, sort_keys=True)

    def execute(self, requests):
        out = np.array([self.args_json.encode("utf-8")], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("ARGS", out)]) for _ in requests]
