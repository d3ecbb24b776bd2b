"""OUTPUT0 = INPUT0, after 2 ms + 0.1 ms x (rows of the whole batch) of wall-clock time.

The time is slept, as a model waiting on an accelerator would: it costs latency, not host CPU,
so the throughput against its ideal measures how well the server keeps the instance busy. The
deadline counts from the start of execute(), so the stub's own Python work is inside the budget
rather than on top of it.
"""

import time

import triton_python_backend_utils as pb_utils

FIXED_S = 0.002
PER_ROW_S = 0.0001


class TritonPythonModel:
    def execute(self, requests):
        start = time.perf_counter()
        inputs = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        rows = sum(x.shape[0] for x in inputs)
        responses = [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", x)]) for x in inputs]
        left = start + FIXED_S + PER_ROW_S * rows - time.perf_counter()
        if left > 0:
            time.sleep(left)
        return responses
