"""Instance-group probe.

initialize() records its own wall-clock start and end (sleeping the model parameter
INIT_SLEEP_S seconds in between, to make overlapping starts visible) and the args it got.
execute() sleeps IN[0] seconds and answers with
  ARGS  = json of the 7 initialize() args,
  PID   = the stub's process id,
  TIMES = [initialize start, initialize end, execute start, execute end] (time.time()).
"""

import json
import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.init_start = time.time()
        params = json.loads(args["model_config"]).get("parameters", {})
        sleep = float(params.get("INIT_SLEEP_S", {}).get("string_value", "0") or 0)
        if sleep > 0:
            time.sleep(sleep)
        self.args_json = json.dumps(args, sort_keys=True)
        self.init_end = time.time()

    def execute(self, requests):
        responses = []
        for request in requests:
            start = time.time()
            seconds = float(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            if seconds > 0:
                time.sleep(seconds)
            end = time.time()
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("ARGS", np.array([self.args_json.encode()], dtype=np.object_)),
                        pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64)),
                        pb_utils.Tensor(
                            "TIMES", np.array([self.init_start, self.init_end, start, end], dtype=np.float64)
                        ),
                    ]
                )
            )
        return responses
