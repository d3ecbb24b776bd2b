"""Sends OUTPUT = INPUT every DELAY ms until the request is cancelled or MAX_RESPONSE_COUNT were sent.

On cancellation it answers a CANCELLED error with FINAL and stops; with IGNORE_CANCEL it never
looks and sends all MAX_RESPONSE_COUNT, the last one with FINAL. Runs inside execute, as
Triton's qa/python_models/response_sender_until_cancelled does.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def scalar(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0]


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            self._stream(request)
        return None

    def _stream(self, request):
        value = int(scalar(request, "INPUT"))
        most = int(scalar(request, "MAX_RESPONSE_COUNT"))
        delay = int(scalar(request, "DELAY")) / 1000.0
        ignore_cancel = bool(scalar(request, "IGNORE_CANCEL"))
        sender = request.get_response_sender()
        sent = 0
        while True:
            if not ignore_cancel and request.is_cancelled():
                error = pb_utils.TritonError("request has been cancelled", pb_utils.TritonError.CANCELLED)
                sender.send(pb_utils.InferenceResponse(error=error), flags=FINAL)
                return
            response = pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", np.array([value], np.int32))])
            sent += 1
            if sent >= most:
                sender.send(response, flags=FINAL)
                return
            sender.send(response)
            time.sleep(delay)
