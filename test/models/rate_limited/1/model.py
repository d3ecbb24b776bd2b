"""Answers WHO = this instance's name after 20 ms (see config.pbtxt)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]

    def execute(self, requests):
        time.sleep(0.02)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("WHO", np.array([self.name], np.object_))]) for _ in requests]
