"""Dynamic-batching probe.

Every response carries, per row of its request:
  OUT        = IN (identity),
  BATCH_LEN  = len(requests) of the execute() call that served it,
  BATCH_ROWS = sum of the first dimensions of the requests in that call,
  EXEC_ID    = 1, 2, ... per instance: which execute() call it was,
  POSITION   = the request's index in `requests`.
Request parameters (JSON, custom): "mark": a file path created when execute() starts;
"sleep_ms": execute() sleeps that long (largest in the batch) before answering;
"hold": a file path; execute() waits (at most 60 s) until that file exists before answering;
"fail": true answers that request with an error.
"""

import json
import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.execs = 0

    def execute(self, requests):
        self.execs += 1
        params = [json.loads(r.parameters() or "{}") for r in requests]
        for p in params:
            if "mark" in p:
                with open(p["mark"], "w") as f:
                    f.write(str(time.time()))
        sleep_ms = max(float(p.get("sleep_ms", 0)) for p in params)
        if sleep_ms > 0:
            time.sleep(sleep_ms / 1000.0)
        for p in params:
            if "hold" in p:
                deadline = time.time() + 60
                while not os.path.exists(p["hold"]) and time.time() < deadline:
                    time.sleep(0.005)
        ins = [pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() for r in requests]
        total = int(sum(x.shape[0] for x in ins))
        responses = []
        for pos, (x, p) in enumerate(zip(ins, params)):
            if p.get("fail"):
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("failed on request")))
                continue
            n = x.shape[0]
            col = lambda v: np.full((n, 1), v, dtype=np.int32)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUT", x.astype(np.float32)),
                        pb_utils.Tensor("BATCH_LEN", col(len(requests))),
                        pb_utils.Tensor("BATCH_ROWS", col(total)),
                        pb_utils.Tensor("EXEC_ID", col(self.execs)),
                        pb_utils.Tensor("POSITION", col(pos)),
                    ]
                )
            )
        return responses
