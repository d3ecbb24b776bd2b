"""A text-generation backend shaped like the vLLM backend (decoupled, auto-completed I/O,
engine arguments in `<version>/model.json`, responses sent from an asyncio loop on its own
thread, `sampling_parameters` as JSON, cancellation through the response sender), with a toy
engine instead of a model: it "generates" the prompt's words in reverse order, one token per
step, `max_tokens` at most, sleeping `step_ms` between tokens. Written for tritium's tests;
the real vLLM engine needs a GPU.
"""

import asyncio
import json
import os
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @classmethod
    def auto_complete_config(cls, auto_complete_model_config):
        inputs = [
            {"name": "text_input", "data_type": "TYPE_STRING", "dims": [1]},
            {"name": "stream", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
            {"name": "sampling_parameters", "data_type": "TYPE_STRING", "dims": [1], "optional": True},
            {"name": "exclude_input_in_output", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
        ]
        outputs = [{"name": "text_output", "data_type": "TYPE_STRING", "dims": [-1]}]
        config = auto_complete_model_config.as_dict()
        have_in = {i["name"] for i in config["input"]}
        have_out = {o["name"] for o in config["output"]}
        for i in inputs:
            if i["name"] not in have_in:
                auto_complete_model_config.add_input(i)
        for o in outputs:
            if o["name"] not in have_out:
                auto_complete_model_config.add_output(o)
        auto_complete_model_config.set_model_transaction_policy({"decoupled": True})
        auto_complete_model_config.set_max_batch_size(0)
        return auto_complete_model_config

    def initialize(self, args):
        self.logger = pb_utils.Logger
        self.config = json.loads(args["model_config"])
        assert pb_utils.using_decoupled_model_transaction_policy(self.config), "toy_llm must be decoupled"
        with open(os.path.join(pb_utils.get_model_dir(), "model.json")) as f:
            self.engine_args = json.load(f)
        output = pb_utils.get_output_config_by_name(self.config, "text_output")
        self.output_dtype = pb_utils.triton_string_to_numpy(output["data_type"])
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.logger.log_info(f"toy_llm engine ready: {self.engine_args}")

    def execute(self, requests):
        for request in requests:
            asyncio.run_coroutine_threadsafe(self.generate(request), self.loop)
        return None

    async def generate(self, request):
        sender = request.get_response_sender()
        try:
            prompt = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0].decode()
            stream = pb_utils.get_input_tensor_by_name(request, "stream")
            stream = bool(stream.as_numpy().reshape(-1)[0]) if stream is not None else False
            params = pb_utils.get_input_tensor_by_name(request, "sampling_parameters")
            params = json.loads(params.as_numpy().reshape(-1)[0].decode()) if params is not None else {}
            exclude = pb_utils.get_input_tensor_by_name(request, "exclude_input_in_output")
            exclude = bool(exclude.as_numpy().reshape(-1)[0]) if exclude is not None else False
            max_tokens = int(params.get("max_tokens", self.engine_args.get("max_tokens", 16)))
            step = float(self.engine_args.get("step_ms", 1)) / 1000
            tokens = prompt.split()[::-1][:max_tokens]
            text = "" if exclude or stream else prompt
            for k, token in enumerate(tokens):
                if sender.is_cancelled():
                    self.logger.log_info(f"toy_llm: request cancelled after {k} token(s)")
                    error = pb_utils.TritonError("request cancelled", pb_utils.TritonError.CANCELLED)
                    sender.send(pb_utils.InferenceResponse(error=error), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    return
                await asyncio.sleep(step)
                piece = (" " if text else "") + token
                text += piece
                if stream:
                    out = pb_utils.Tensor("text_output", np.array([piece.encode()], dtype=self.output_dtype))
                    sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            if stream:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                out = pb_utils.Tensor("text_output", np.array([text.encode()], dtype=self.output_dtype))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception as e:  # the engine's error goes to the client
            self.logger.log_error(f"toy_llm: {e}")
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
