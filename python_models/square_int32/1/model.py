"""square_int32: IN = n -> n responses carrying OUT = n, then a flags-only FINAL.

Requests are answered from worker threads (execute returns None at once); finalize waits for
the streams in flight.
"""

import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                "square_int32 needs model_transaction_policy { decoupled: true }")
        out = pb_utils.get_output_config_by_name(config, "OUT")
        self.out_dtype = pb_utils.triton_string_to_numpy(out["data_type"])
        self._threads = set()
        self._lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            sender = request.get_response_sender()
            if n < 0:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    f"IN must be non-negative, got {n}", pb_utils.TritonError.INVALID_ARG)),
                    flags=FINAL)
                continue
            t = threading.Thread(target=self._respond, args=(sender, n), daemon=True)
            with self._lock:
                self._threads.add(t)
            t.start()
        return None

    def _respond(self, sender, n):
        try:
            out = np.array([n], dtype=self.out_dtype)
            for _ in range(n):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
            sender.send(flags=FINAL)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def finalize(self):
        with self._lock:
            pending = list(self._threads)
        for t in pending:
            t.join(timeout=5.0)
