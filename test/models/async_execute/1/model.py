"""async def execute: decoupled coroutines run in the background, others are awaited."""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def out(text):
    return pb_utils.InferenceResponse(
        [pb_utils.Tensor("OUT", np.array([text.encode()], dtype=np.object_))])


class TritonPythonModel:
    def initialize(self, args):
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))
        self.event = None

    async def execute(self, requests):
        if not self.decoupled:
            await asyncio.sleep(0.01)
            return [out("awaited") for _ in requests]
        if self.event is None:
            self.event = asyncio.Event()  # bound to the stub's loop on first use
        for request in requests:
            mode = pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0].decode()
            sender = request.get_response_sender()
            if mode == "wait":
                try:
                    await asyncio.wait_for(self.event.wait(), timeout=10)
                    sender.send(out("released"), flags=FINAL)
                except asyncio.TimeoutError:
                    sender.send(out("timeout"), flags=FINAL)
            elif mode == "release":
                self.event.set()
                sender.send(out("releaser"), flags=FINAL)
        return None
