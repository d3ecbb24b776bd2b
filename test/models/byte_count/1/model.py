"""Counts and sums the bytes of DATA after sleeping MS ms; logs its execution interval to the
file named by the request parameter `trace`, if any (see config.pbtxt)."""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            start = time.monotonic()
            data = pb_utils.get_input_tensor_by_name(r, "DATA").as_numpy()
            ms = int(pb_utils.get_input_tensor_by_name(r, "MS").as_numpy()[0])
            time.sleep(ms / 1000)
            trace = json.loads(r.parameters() or "{}").get("trace")
            if trace:
                with open(trace, "a") as f:
                    f.write(f"{start} {time.monotonic()}\n")
            out.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("COUNT", np.array([data.size], dtype=np.int64)),
                        pb_utils.Tensor("SUM", np.array([int(data.sum(dtype=np.uint64))], dtype=np.uint64)),
                    ]
                )
            )
        return out
