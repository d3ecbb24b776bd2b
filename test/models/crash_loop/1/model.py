"""Crash loop: the first initialize succeeds and records it in $MODEL_STATE_DIR/crashloop_started;
every later one raises. MODE 2 makes execute call os._exit(3)."""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

MODEL_STATE_DIR = os.environ.get("MODEL_STATE_DIR", "/tmp")


class TritonPythonModel:
    def initialize(self, args):
        marker = os.path.join(MODEL_STATE_DIR, "crashloop_started")
        if os.path.exists(marker):
            raise RuntimeError("crash_loop cannot start twice: the database handle is gone")
        with open(marker, "w") as f:
            f.write(str(os.getpid()))

    def execute(self, requests):
        out = []
        for r in requests:
            mode = int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0])
            if mode == 2:
                os._exit(3)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([mode], dtype=np.int32))]))
        return out
