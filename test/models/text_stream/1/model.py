"""Streams the words of text_input back, one response each, then a flags-only FINAL."""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self._stream, args=(request,), daemon=True).start()
        return None

    @staticmethod
    def _stream(request):
        text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
        delay = json.loads(request.parameters()).get("delay_ms", 0) / 1000.0
        sender = request.get_response_sender()
        for word in text.decode().split():
            if sender.is_cancelled():
                break
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor(
                "text_output", np.array([word.encode()], dtype=np.object_))]))
            time.sleep(delay)
        sender.send(flags=FINAL)
