"""Non-decoupled use of the response sender beyond execute's return (MODE-driven).

late / late_list: execute returns None / [None]; a thread answers with FINAL afterwards.
late_two_step: a thread sends the response, then a flags-only FINAL.
drop: execute returns None and keeps nothing: the request is dropped without FINAL.
keep: the sender is kept, nothing is sent; kept: how many are kept; release: drops them all.
pid: the stub's pid (to stop the instance from outside).
two_raise: sends a response, then a second one, which raises out of execute.
final_then_two: sends a FINAL response, then a second one (raises; caught and recorded).
report: the texts the model caught, then forgets them.
"""

import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
KEPT = []
CAUGHT = []


def out(*texts):
    return pb_utils.InferenceResponse(
        [pb_utils.Tensor("OUT", np.array([t.encode() for t in texts], dtype=np.object_))])


def after_return(fn):
    # Long enough for execute to have returned and the stub to be reading its next message.
    def run():
        time.sleep(0.3)
        fn()
    threading.Thread(target=run, daemon=True).start()


class TritonPythonModel:
    def execute(self, requests):
        request = requests[0]
        mode = pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy().reshape(-1)[0]
        mode = mode.decode()
        sender = request.get_response_sender()
        if mode == "late":
            after_return(lambda: sender.send(out("late"), flags=FINAL))
            return None
        if mode == "late_list":
            after_return(lambda: sender.send(out("late_list"), flags=FINAL))
            return [None]
        if mode == "late_two_step":
            def two_step():
                sender.send(out("two_step"))
                time.sleep(0.1)
                sender.send(flags=FINAL)
            after_return(two_step)
            return None
        if mode == "drop":
            return None
        if mode == "keep":
            KEPT.append(sender)
            return None
        if mode == "kept":
            return [out(str(len(KEPT)))]
        if mode == "release":
            n = len(KEPT)
            KEPT.clear()
            return [out(f"released {n}")]
        if mode == "pid":
            return [out(str(os.getpid()))]
        if mode == "two_raise":
            sender.send(out("first"))
            try:
                sender.send(out("second"))
            except pb_utils.TritonModelException as e:
                CAUGHT.append(str(e))
                raise
        if mode == "final_then_two":
            sender.send(out("first"), flags=FINAL)
            try:
                sender.send(out("second"))
            except pb_utils.TritonModelException as e:
                CAUGHT.append(str(e))
            return None
        if mode == "report":
            texts = list(CAUGHT)
            CAUGHT.clear()
            return [out(*texts)]
        raise pb_utils.TritonModelException(f"unknown MODE {mode}")
