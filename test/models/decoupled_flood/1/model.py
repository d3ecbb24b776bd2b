"""Decoupled flood: for each request, a thread sends up to N responses, each OUT = INT32 [COUNT]
(0, 1, 2, ...), as fast as the sender takes them, then FINAL. When the request is cancelled it
stops, logs 'decoupled_flood: cancelled after <sent>' and ends with FINAL alone."""

import threading

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def _flood(request, sender, count, n):
    out = pb_utils.Tensor("OUT", np.arange(count, dtype=np.int32))
    sent = 0
    while sent < n:
        if request.is_cancelled():
            pb_utils.Logger.log_info(f"decoupled_flood: cancelled after {sent}")
            break
        sender.send(pb_utils.InferenceResponse([out]))
        sent += 1
    sender.send(flags=FINAL)


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            count = int(pb_utils.get_input_tensor_by_name(r, "COUNT").as_numpy()[0])
            n = int(pb_utils.get_input_tensor_by_name(r, "N").as_numpy()[0])
            threading.Thread(target=_flood, args=(r, r.get_response_sender(), count, n), daemon=True).start()
        return None
