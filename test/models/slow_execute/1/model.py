"""Shutdown model: execute sleeps MS ms and answers OUT = VALUE + 1; finalize writes
$MODEL_STATE_DIR/finalized_<instance> (or hangs forever when FINALIZE_HANG=1). initialize sleeps
INIT_SLEEP_S seconds (0 by default), after writing $MODEL_STATE_DIR/initializing_<instance> so a
test knows it is inside."""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

MODEL_STATE_DIR = os.environ.get("MODEL_STATE_DIR", "/tmp")


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]
        sleep_s = float(os.environ.get("INIT_SLEEP_S", "0"))
        if sleep_s > 0:
            with open(os.path.join(MODEL_STATE_DIR, f"initializing_{self.instance}"), "w") as f:
                f.write(str(os.getpid()))
        time.sleep(sleep_s)

    def execute(self, requests):
        out = []
        for r in requests:
            ms = int(pb_utils.get_input_tensor_by_name(r, "MS").as_numpy()[0])
            value = pb_utils.get_input_tensor_by_name(r, "VALUE").as_numpy()
            time.sleep(ms / 1000)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", (value + 1).astype(np.int32))]))
        return out

    def finalize(self):
        if os.environ.get("FINALIZE_HANG") == "1":
            while True:
                time.sleep(1)
        with open(os.path.join(MODEL_STATE_DIR, f"finalized_{self.instance}"), "w") as f:
            f.write(str(os.getpid()))
