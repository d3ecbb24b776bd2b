"""Issue 6 shutdown model: execute sleeps MS ms and answers OUT = VALUE + 1; finalize writes
$H6_DIR/finalized_<instance> (or hangs forever when H6_FINALIZE_HANG=1). initialize sleeps
H6_INIT_SLEEP seconds (0 by default)."""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

H6_DIR = os.environ.get("H6_DIR", "/tmp")


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]
        time.sleep(float(os.environ.get("H6_INIT_SLEEP", "0")))

    def execute(self, requests):
        out = []
        for r in requests:
            ms = int(pb_utils.get_input_tensor_by_name(r, "MS").as_numpy()[0])
            value = pb_utils.get_input_tensor_by_name(r, "VALUE").as_numpy()
            time.sleep(ms / 1000)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", (value + 1).astype(np.int32))]))
        return out

    def finalize(self):
        if os.environ.get("H6_FINALIZE_HANG") == "1":
            while True:
                time.sleep(1)
        with open(os.path.join(H6_DIR, f"finalized_{self.instance}"), "w") as f:
            f.write(str(os.getpid()))
