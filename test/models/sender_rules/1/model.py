"""MODE-driven misuse of the response sender; exception texts come back as OUT strings.

Texts raised after a request is closed cannot reach its client; they are kept in LATE and
returned by a later request with MODE "report".

Decoupled modes: violations, errors, error_final, zero, one_final, params, return_list, raise,
drop, report. Non-decoupled modes: two, final_first, report (and the shared ones that make
sense there).
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
LATE = []
LATE_LOCK = threading.Lock()


def out(*texts):
    return pb_utils.InferenceResponse(
        [pb_utils.Tensor("OUT", np.array([t.encode() for t in texts], dtype=np.object_))])


def attempt(fn):
    try:
        fn()
    except pb_utils.TritonModelException as e:
        return str(e)
    return "no error"


def late(text):
    with LATE_LOCK:
        LATE.append(text)


class TritonPythonModel:
    def initialize(self, args):
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))

    def execute(self, requests):
        returned = []
        for request in requests:
            mode = pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy().reshape(-1)[0]
            mode = mode.decode()
            if mode == "raise":
                raise pb_utils.TritonModelException("Intentional Error")
            if mode == "return_list":
                sender = request.get_response_sender()

                def after_return(sender=sender):
                    time.sleep(0.3)  # execute has returned and the stub has closed the sender
                    late(attempt(lambda: sender.send(out("too late"), flags=FINAL)))

                threading.Thread(target=after_return, daemon=True).start()
                return []
            returned.append(getattr(self, "_" + mode)(request))
        return None if self.decoupled else returned

    # -- shared -----------------------------------------------------------------------------

    def _report(self, request):
        with LATE_LOCK:
            texts = list(LATE)
            LATE.clear()
        response = out(*texts) if texts else out("(none)")
        if not self.decoupled:
            return response
        request.get_response_sender().send(response, flags=FINAL)
        return None

    # -- decoupled --------------------------------------------------------------------------

    def _violations(self, request):
        sender = request.get_response_sender()
        texts = [
            attempt(lambda: sender.send(out("x"), flags=2)),
            attempt(lambda: sender.send(None, flags=0)),
            attempt(lambda: sender.send(flags=0)),
        ]
        sender.send(out(*texts))
        sender.send(flags=FINAL)
        late(attempt(lambda: sender.send(out("after final"))))
        late(attempt(lambda: sender.send(flags=FINAL)))

    def _errors(self, request):
        sender = request.get_response_sender()
        sender.send(out("first"))
        sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
            "mid-stream error", pb_utils.TritonError.INVALID_ARG)))
        sender.send(out("second"))
        sender.send(flags=FINAL)

    def _error_final(self, request):
        request.get_response_sender().send(pb_utils.InferenceResponse(
            error=pb_utils.TritonError("final error", pb_utils.TritonError.UNAVAILABLE)),
            flags=FINAL)

    def _zero(self, request):
        request.get_response_sender().send(flags=FINAL)

    def _one_final(self, request):
        request.get_response_sender().send(out("only"), flags=FINAL)

    def _params(self, request):
        request.get_response_sender().send(pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([b"p"], dtype=np.object_))],
            parameters={"p_int": 7, "p_str": "s", "p_bool": True}), flags=FINAL)

    def _drop(self, request):
        return None  # neither a response nor FINAL: the request is dropped with its sender

    # -- non-decoupled ----------------------------------------------------------------------

    def _two(self, request):
        sender = request.get_response_sender()
        sender.send(out("a"))
        late(attempt(lambda: sender.send(out("b"))))
        sender.send(flags=FINAL)
        return None

    def _final_first(self, request):
        sender = request.get_response_sender()
        return out(attempt(lambda: sender.send(flags=FINAL)))
