"""Runs the BLS or model-control call a JSON command describes and answers with what it saw.

Commands (CMD, JSON):
* {"op": "call", "model", "inputs": {name: [dtype, shape, values or one fill value]}, "outputs": [names],
   "decoupled": bool, "kw": {InferenceRequest keywords}, "cancel_after": n (decoupled: cancel
   the iterator after n responses), "summary": bool (outputs as [dtype, shape, sum])} -> {"responses": [response...]}, each response
   {"error": [code, message]} or {"outputs": {name: [dtype, shape, values]}, "params": json}
* {"op": "ready", "args": [...]} / {"op": "load", "args": [...]} / {"op": "unload", "args": [...]}
   -> {"value": returned} or {"raised": "<Type>: <message>"}
* {"op": "init"} -> what the same calls did from initialize (BLS raises there, as in Triton)
* {"op": "arena"} -> {"blocks": blocks in use in this stub's output arenas} (tritium internals,
   to check that BLS calls give back their input blocks)
* {"op": "die", "model", ...call fields} -> starts the call in a thread, then exits the process
* {"op": "thread", "file", ...call fields} -> returns at once; a thread makes the call after
   execute returned and writes its result as JSON to `file`
"""

import json
import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FUNCS = {"ready": "is_model_ready", "load": "load_model", "unload": "unload_model"}


def to_tensor(name, spec):
    dtype, shape, values = spec
    if not isinstance(values, list):  # one value repeated over the shape (large tensors)
        return pb_utils.Tensor(name, np.full(shape, values, dtype=pb_utils.triton_string_to_numpy("TYPE_" + dtype)))
    if dtype == "BYTES":
        array = np.array([v.encode() for v in values], dtype=np.object_).reshape(shape)
    else:
        array = np.array(values, dtype=pb_utils.triton_string_to_numpy("TYPE_" + dtype)).reshape(shape)
    return pb_utils.Tensor(name, array)


def from_tensor(t, summary=False):
    a = t.as_numpy()
    if summary:  # large tensors: their sum stands for the values
        return [str(a.dtype), list(a.shape), float(a.sum())]
    values = [v.decode() if isinstance(v, bytes) else v for v in a.reshape(-1).tolist()]
    return [str(a.dtype), list(a.shape), values]


def describe(response, summary=False):
    if response.has_error():
        return {"error": [int(response.error().code()), response.error().message()]}
    outputs = {t.name(): from_tensor(t, summary) for t in response.output_tensors()}
    return {"outputs": outputs, "params": response.parameters()}


def attempt(fn):
    try:
        return {"value": fn()}
    except Exception as e:
        return {"raised": f"{type(e).__name__}: {e}"}


def build(cmd):
    inputs = [to_tensor(n, s) for n, s in cmd.get("inputs", {}).items()]
    return pb_utils.InferenceRequest(
        model_name=cmd["model"], inputs=inputs, requested_output_names=cmd.get("outputs", []), **cmd.get("kw", {})
    )


def call(cmd):
    request = build(cmd)
    summary = cmd.get("summary", False)
    if not cmd.get("decoupled"):
        return {"responses": [describe(request.exec(), summary)]}
    out = []
    iterator = request.exec(decoupled=True)
    for response in iterator:
        out.append(describe(response, summary))
        if len(out) == cmd.get("cancel_after", -1):
            iterator.cancel()
    return {"responses": out}


def write_later(cmd):
    time.sleep(0.2)  # execute has returned by now: the main loop is reading ring A
    result = call(cmd)
    with open(cmd["file"] + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(cmd["file"] + ".tmp", cmd["file"])


class TritonPythonModel:
    def initialize(self, args):
        self.init = {
            "ready": attempt(lambda: pb_utils.is_model_ready("add_sub")),
            "bls": attempt(lambda: build({"model": "add_sub"}).exec()),
        }

    def execute(self, requests):
        responses = []
        for request in requests:
            cmd = json.loads(pb_utils.get_input_tensor_by_name(request, "CMD").as_numpy()[0])
            op = cmd["op"]
            if op == "call":
                result = call(cmd)
            elif op in FUNCS:
                result = attempt(lambda: getattr(pb_utils, FUNCS[op])(*cmd["args"]))
            elif op == "init":
                result = self.init
            elif op == "arena":
                from tritium_stub.state import STATE

                result = {"blocks": sum(s.arena.blocks_in_use() for s in STATE.channel._outputs)}
            elif op == "thread":
                threading.Thread(target=write_later, args=(cmd,), daemon=True).start()
                result = {"started": True}
            elif op == "die":
                threading.Thread(target=call, args=(cmd,), daemon=True).start()
                time.sleep(cmd.get("die_after_s", 0.5))
                os._exit(3)
            else:
                result = {"unknown op": op}
            out = np.array([json.dumps(result).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("RESULT", out)]))
        return responses
