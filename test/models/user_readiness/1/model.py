"""is_ready() behaviours for the readiness tests, chosen by the model name `ready_<behaviour>`:
true, false, raises, non_bool, slow (answers after 8 s, past Triton's 5 s bound), async_false.
Every call appends a line to `<repository>/<model name>.is_ready_calls`, which the tests count.
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        name = args["model_name"]
        self.behaviour = name.split("ready_", 1)[1]
        self.calls_file = os.path.join(args["model_repository"], "..", f"{name}.is_ready_calls")

    def is_ready(self):
        with open(self.calls_file, "a") as f:
            f.write("call\n")
        b = self.behaviour
        if b == "true":
            return True
        if b == "false":
            return False
        if b == "raises":
            raise ValueError("the database connection is gone")
        if b == "non_bool":
            return "yes"
        if b == "slow":
            time.sleep(8)
            return True
        if b == "async_false":
            return self._async_false()
        raise RuntimeError(f"unknown behaviour {b!r}")

    async def _async_false(self):
        return False

    def execute(self, requests):
        responses = []
        for request in requests:
            seconds = float(pb_utils.get_input_tensor_by_name(request, "SECONDS").as_numpy()[0])
            # Pure Python work: the GIL is held except at the interpreter's switch points.
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                n += 1
            out = pb_utils.Tensor("OUT", np.array([seconds], dtype=np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
