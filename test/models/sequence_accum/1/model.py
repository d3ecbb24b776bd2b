"""A sequence accumulator: OUTPUT is the running sum of INPUT over the sequence.

The sum is kept per batch row under the direct strategy (a row is a sequence's slot, as a
stateful model relies on) and per correlation id otherwise. INFO is a JSON string of what the
model saw: the controls, correlation_id() and flags(), the row and the batch size, so tests
can check what the sequence batcher did. A request parameter `delay_ms` makes the execution
sleep, so tests can hold an instance busy.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _control(request, name):
    t = pb_utils.get_input_tensor_by_name(request, name)
    if t is None:
        return None
    v = t.as_numpy().reshape(-1)[0]
    return v.decode() if isinstance(v, bytes) else v.item()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.direct = "oldest" not in config.get("sequence_batching", {})
        self.sums = {}

    def execute(self, requests):
        delay = max(int(json.loads(r.parameters()).get("delay_ms", 0)) for r in requests)
        if delay:
            time.sleep(delay / 1000)
        responses = []
        for row, request in enumerate(requests):
            value = int(pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().reshape(-1)[0])
            start, end, ready, corrid = (_control(request, n) for n in ("START", "END", "READY", "CORRID"))
            key = row if self.direct else request.correlation_id()
            if ready:
                if start:
                    self.sums[key] = 0
                # Wrapped as int32 arithmetic would (perf_analyzer sends random values).
                self.sums[key] = (self.sums.get(key, 0) + value + 2**31) % 2**32 - 2**31
            info = {
                "start": start,
                "end": end,
                "ready": ready,
                "corrid": corrid,
                "correlation_id": request.correlation_id(),
                "flags": request.flags(),
                "row": row,
                "batch": len(requests),
                "pid": os.getpid(),
            }
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUTPUT", np.array([self.sums.get(key, 0) if ready else -1], np.int32)),
                        pb_utils.Tensor("INFO", np.array([json.dumps(info)], np.object_)),
                    ]
                )
            )
        return responses
