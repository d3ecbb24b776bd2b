"""Stamp and sleep: OUT = IN + 1 after sleeping 300 ms; START and END are time.monotonic_ns()
at the start and end of the execution (one clock for every process of the host), so a test can
tell whether two executions overlapped. Every IN seen is appended to
<model dir>/seen-<instance>.txt, one value per line."""

import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "seen-%s.txt" % args["model_instance_name"])

    def execute(self, requests):
        responses = []
        for request in requests:
            start = time.monotonic_ns()
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            with open(self.log, "a") as f:
                f.write("%g\n" % float(x.reshape(-1)[0]))
            time.sleep(0.3)
            end = time.monotonic_ns()
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUT", (x + 1).astype(np.float32)),
                        pb_utils.Tensor("START", np.array([start], dtype=np.int64)),
                        pb_utils.Tensor("END", np.array([end], dtype=np.int64)),
                    ]
                )
            )
        return responses
