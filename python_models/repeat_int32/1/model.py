"""repeat_int32: a decoupled model that streams each element of IN back as its own response.

Every request is served by its own worker thread, so `execute` returns at once and the
instance can take the next batch while earlier requests are still streaming. A request is
finished with a flags-only FINAL, after WAIT milliseconds. A request cancelled by its client
(`is_cancelled()`) stops early and ends with a CANCELLED error.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def initialize(self, args):
        if not pb_utils.using_decoupled_model_transaction_policy(json.loads(args["model_config"])):
            raise pb_utils.TritonModelException(
                "repeat_int32 needs model_transaction_policy { decoupled: true }")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy()
            sender = request.get_response_sender()
            if values.shape != delays.shape:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    f"IN and DELAY must have the same shape, got {list(values.shape)} and "
                    f"{list(delays.shape)}", pb_utils.TritonError.INVALID_ARG)), flags=FINAL)
                continue
            with self._lock:
                self._active += 1
            worker = threading.Thread(
                target=self._stream, daemon=True,
                args=(request, sender, values.copy(), delays.copy(), int(wait.reshape(-1)[0])))
            worker.start()
        return None

    def _stream(self, request, sender, values, delays, wait_ms):
        try:
            for idx, (value, delay) in enumerate(zip(values, delays)):
                time.sleep(int(delay) / 1000.0)
                if request.is_cancelled():
                    sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                        "request cancelled", pb_utils.TritonError.CANCELLED)), flags=FINAL)
                    return
                sender.send(pb_utils.InferenceResponse([
                    pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                    pb_utils.Tensor("IDX", np.array([idx], dtype=np.uint32)),
                ]))
            time.sleep(wait_ms / 1000.0)
            sender.send(flags=FINAL)
        finally:
            with self._lock:
                self._active -= 1
                self._idle.notify_all()

    def finalize(self):
        # Let streams in flight finish (bounded), like Triton's example does.
        with self._lock:
            self._idle.wait_for(lambda: self._active == 0, timeout=5.0)
