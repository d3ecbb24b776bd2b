"""tiny_chat: a decoupled text model with no weights, for trying the OpenAI API.

It reads the text of the last user turn of its prompt (the chat template in
tokenizer_config.json marks turns with <|im_start|> / <|im_end|>; a plain completion prompt is
taken whole) and answers with its words in reverse order, one word per token, so every answer
is predictable. It honours what a language model's caller relies on: `max_tokens` and `stop`
from `sampling_parameters`, streaming (one response per token when `stream` is true, else one
response), `exclude_input_in_output`, the `return_*` flags for token counts and the finish
reason, and cancellation (a client that goes away stops the generation). A token is a
whitespace-separated word here, prompt included.
"""

import json
import re
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

LAST_USER_TURN = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.S)


def first(request, name, default):
    t = pb_utils.get_input_tensor_by_name(request, name)
    if t is None:
        return default
    v = t.as_numpy().reshape(-1)[0]
    return v.decode() if isinstance(v, bytes) else v


class TritonPythonModel:
    def initialize(self, args):
        # Seconds between tokens, so a stream is visibly a stream (and can be cancelled midway).
        params = json.loads(args["model_config"]).get("parameters", {})
        self.step_s = float(params.get("step_ms", {}).get("string_value", "20")) / 1000

    def execute(self, requests):
        # Each request generates on its own thread, so one long answer does not hold the others.
        for request in requests:
            threading.Thread(target=self.generate, args=(request,), daemon=True).start()
        return None

    def generate(self, request):
        sender = request.get_response_sender()
        try:
            prompt = first(request, "text_input", "")
            stream = bool(first(request, "stream", False))
            exclude = bool(first(request, "exclude_input_in_output", False))
            sampling = json.loads(first(request, "sampling_parameters", "{}") or "{}")
            max_tokens = int(sampling.get("max_tokens", 16))
            stops = sampling.get("stop") or []
            stops = [stops] if isinstance(stops, str) else stops
            turns = LAST_USER_TURN.findall(prompt)
            words = (turns[-1] if turns else prompt).split()[::-1]
            want = {
                "in": bool(first(request, "return_num_input_tokens", False)),
                "out": bool(first(request, "return_num_output_tokens", False)),
                "finish": bool(first(request, "return_finish_reason", False)),
                "logprobs": bool(first(request, "return_logprobs", False)),
            }
            n_in = len(prompt.split())

            def response(text, n_out, finish, tokens):
                tensors = [pb_utils.Tensor("text_output", np.array([text.encode()], dtype=np.object_))]
                if want["in"]:
                    tensors.append(pb_utils.Tensor("num_input_tokens", np.array([n_in], dtype=np.uint32)))
                if want["out"]:
                    tensors.append(pb_utils.Tensor("num_output_tokens", np.array([n_out], dtype=np.uint32)))
                if want["logprobs"]:
                    lp = [{w: {"logprob": -len(w) / 10, "rank": 1, "decoded_token": w}} for w in tokens]
                    tensors.append(pb_utils.Tensor("logprobs", np.array([json.dumps(lp).encode()], dtype=np.object_)))
                if want["finish"] and finish is not None:
                    tensors.append(pb_utils.Tensor("finish_reason", np.array([finish.encode()], dtype=np.object_)))
                return pb_utils.InferenceResponse(output_tensors=tensors)

            text = "" if exclude else prompt
            generated = ""
            finish = "length"
            count = 0
            sent = []
            for word in words:
                if count == max_tokens:
                    break
                if sender.is_cancelled():
                    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    return
                time.sleep(self.step_s)
                piece = (" " if count > 0 else "") + word
                if any(s in (generated + piece) for s in stops):
                    finish = "stop"
                    break
                count += 1
                generated += piece
                text += piece
                sent.append(word)
                if stream:
                    sender.send(response(piece, 1, None, [word]))
            else:
                finish = "stop"
            if stream:
                # The final response carries no text, only the finish reason.
                sender.send(response("", 0, finish, []), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                sender.send(response(text, count, finish, sent), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception as e:  # the error goes to the client
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
