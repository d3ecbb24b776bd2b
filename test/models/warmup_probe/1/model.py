"""Warmup probe.

Every execute() appends one JSON line to <model dir>/execs-<instance name>.jsonl:
  {"n": len(requests), "requests": [{"id": ..., "inputs": {name: {"shape": [...], "hex": ...}}}]}
with "hex" the raw bytes of numeric inputs, and "items" (hex of each element) for BYTES inputs.
A request whose input I starts with 99 fails the whole execute() with an exception.
"""

import json
import os

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "execs-%s.jsonl" % args["model_instance_name"])

    def execute(self, requests):
        entry = {"n": len(requests), "requests": []}
        fail = False
        for r in requests:
            inputs = {}
            for name in ("F", "S", "I"):
                t = pb_utils.get_input_tensor_by_name(r, name)
                if t is None:
                    continue
                a = t.as_numpy()
                if a.dtype == np.object_:
                    inputs[name] = {"shape": list(a.shape), "items": [bytes(x).hex() for x in a.reshape(-1)]}
                else:
                    inputs[name] = {"shape": list(a.shape), "dtype": str(a.dtype), "hex": a.tobytes().hex()}
                if name == "I" and a.size and int(a.reshape(-1)[0]) == 99:
                    fail = True
            entry["requests"].append({"id": r.request_id(), "inputs": inputs})
        with open(self.log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        if fail:
            raise pb_utils.TritonModelException("input I starts with 99")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([[len(requests)]], dtype=np.int32))]) for _ in requests]
