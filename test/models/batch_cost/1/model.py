"""Cost model: execute() lasts FIXED_MS + PER_ROW_MS x (rows in the batch) of wall-clock time.

The time is slept (against a deadline, so Python overhead is part of it), the way a model that
waits on an accelerator behaves: it costs latency, not host CPU. OUTPUT0 = INPUT0.
"""

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.fixed = float(params.get("FIXED_MS", {}).get("string_value", "2")) / 1000.0
        self.per_row = float(params.get("PER_ROW_MS", {}).get("string_value", "0.1")) / 1000.0

    def execute(self, requests):
        start = time.perf_counter()
        ins = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        rows = sum(x.shape[0] for x in ins)
        deadline = start + self.fixed + self.per_row * rows
        responses = [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x)]) for x in ins]
        left = deadline - time.perf_counter()
        if left > 0:
            time.sleep(left)
        return responses
