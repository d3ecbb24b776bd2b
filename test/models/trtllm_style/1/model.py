"""TensorRT-LLM-style test model. Its first token reports the settings it received
("max_tokens=5;temperature=0.5;..."), then it sends the words of its prompt in order, one per
token, `max_tokens` tokens in all (the report included). Streams when `stream` is true and the
model is decoupled; a non-decoupled variant (the tests edit the config) answers once. A
cancelled request is logged with how many tokens it sent."""

import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def value(request, name):
    t = pb_utils.get_input_tensor_by_name(request, name)
    if t is None:
        return None
    v = t.as_numpy().reshape(-1)[0]
    return v.decode() if isinstance(v, bytes) else v.item()


class TritonPythonModel:
    def initialize(self, args):
        import json

        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(json.loads(args["model_config"]))

    def tokens(self, request):
        settings = ";".join(
            f"{k}={round(v, 3) if isinstance(v, float) else v}"
            for k in ("max_tokens", "temperature", "top_p", "seed", "stream", "exclude_input_in_output")
            if (v := value(request, k)) is not None
        )
        return ([settings] + value(request, "text_input").split())[: value(request, "max_tokens")]

    def execute(self, requests):
        if not self.decoupled:
            out = []
            for r in requests:
                text = " ".join(self.tokens(r))
                out.append(pb_utils.InferenceResponse([pb_utils.Tensor("text_output", np.array([text.encode()], dtype=np.object_))]))
            return out
        for r in requests:
            threading.Thread(target=self.stream, args=(r,), daemon=True).start()
        return None

    def stream(self, request):
        sender = request.get_response_sender()
        tokens = self.tokens(request)
        streaming = bool(value(request, "stream"))
        for k, token in enumerate(tokens):
            # Checked after the pause, so a cancel sent on the previous token is seen here.
            time.sleep(0.05)
            if sender.is_cancelled():
                pb_utils.Logger.log_info(f"trtllm_style: cancelled after {k} token(s)")
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            if streaming:
                piece = (" " if k else "") + token
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("text_output", np.array([piece.encode()], dtype=np.object_))]))
        if streaming:
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        else:
            text = " ".join(tokens)
            out = pb_utils.Tensor("text_output", np.array([text.encode()], dtype=np.object_))
            sender.send(pb_utils.InferenceResponse([out]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
