"""Supervision model. MODE per request (the batch takes the highest):

0 FAST   OUT = 2 * VALUE, with the PID and INSTANCE that served it
1 BLOCK  write $MODEL_STATE_DIR/busy_<instance> (pid), then wait until $MODEL_STATE_DIR/release exists (30 s max)
2 EXIT   write $MODEL_STATE_DIR/exit_<instance> (epoch ms), then os._exit(7)
3 HANG   write $MODEL_STATE_DIR/busy_<instance>, then sleep 60 s inside C code holding the GIL, so the
         stub's heartbeat thread cannot run (a native extension stuck in a deadlock)
4 EXIT_ON_GO  write $MODEL_STATE_DIR/busy_<instance>, wait until $MODEL_STATE_DIR/go_exit exists, then do EXIT
"""

import ctypes
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

MODEL_STATE_DIR = os.environ.get("MODEL_STATE_DIR", "/tmp")


def _write(name, text):
    tmp = os.path.join(MODEL_STATE_DIR, f".{name}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(MODEL_STATE_DIR, name))


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]

    def execute(self, requests):
        modes = [int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy().reshape(-1)[0]) for r in requests]
        mode = max(modes)
        if mode in (1, 4):
            _write(f"busy_{self.instance}", str(os.getpid()))
            wait_for = "release" if mode == 1 else "go_exit"
            deadline = time.monotonic() + 30
            while not os.path.exists(os.path.join(MODEL_STATE_DIR, wait_for)) and time.monotonic() < deadline:
                time.sleep(0.01)
        if mode in (2, 4):
            _write(f"exit_{self.instance}", str(int(time.time() * 1000)))
            os._exit(7)
        elif mode == 3:
            _write(f"busy_{self.instance}", str(os.getpid()))
            ctypes.PyDLL(None).sleep(60)  # PyDLL: the GIL stays held for the whole call
        responses = []
        for r in requests:
            value = pb_utils.get_input_tensor_by_name(r, "VALUE").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", (value * 2).astype(np.int32)),
                pb_utils.Tensor("PID", np.full(value.shape, os.getpid(), dtype=np.int32)),
                pb_utils.Tensor("INSTANCE", np.full(value.shape, self.instance.encode(), dtype=object)),
            ]))
        return responses
