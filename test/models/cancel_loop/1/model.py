"""Loops until the client cancels, then records what is_cancelled() reported (test side channel).

Decoupled: sends OUT = i every interval_ms (from a thread), at most N responses; on
cancellation sends a CANCELLED error with FINAL. Non-decoupled: polls request.is_cancelled()
for up to N ms inside execute, then returns OUT = polls, or a CANCELLED error.
"""

import json
import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
CANCELLED = pb_utils.TritonError("request cancelled by the client", pb_utils.TritonError.CANCELLED)


def _record(request, sender, sent):
    params = json.loads(request.parameters())
    seen = {"request": request.is_cancelled(), "sender": sender.is_cancelled(), "sent": sent}
    pb_utils.Logger.log_info(f"cancel_loop: '{params.get('tag', '')}' cancelled after {sent}")
    if "marker_dir" in params:
        path = os.path.join(params["marker_dir"], params.get("tag", "cancelled"))
        with open(path + ".tmp", "w") as f:
            json.dump(seen, f)
        os.replace(path + ".tmp", path)


class TritonPythonModel:
    def initialize(self, args):
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))

    def execute(self, requests):
        if self.decoupled:
            for request in requests:
                threading.Thread(target=self._stream, args=(request,), daemon=True).start()
            return None
        return [self._wait(request) for request in requests]

    @staticmethod
    def _settings(request):
        n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy().reshape(-1)[0])
        interval = json.loads(request.parameters()).get("interval_ms", 20) / 1000.0
        return n, interval

    def _stream(self, request):
        sender = request.get_response_sender()
        n, interval = self._settings(request)
        for i in range(n):
            if sender.is_cancelled():
                _record(request, sender, i)
                sender.send(pb_utils.InferenceResponse(error=CANCELLED), flags=FINAL)
                return
            sender.send(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([i], dtype=np.int32))]))
            time.sleep(interval)
        sender.send(flags=FINAL)

    def _wait(self, request):
        n, _ = self._settings(request)
        deadline = time.monotonic() + n / 1000.0
        polls = 0
        while time.monotonic() < deadline:
            if request.is_cancelled():
                _record(request, request.get_response_sender(), polls)
                return pb_utils.InferenceResponse(error=CANCELLED)
            polls += 1
            time.sleep(0.005)
        return pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([polls], dtype=np.int32))])
