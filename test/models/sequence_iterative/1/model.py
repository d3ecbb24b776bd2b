"""Runs a request INPUT times through request rescheduling (iterative sequences).

Decoupled: every iteration sends OUTPUT = its number, the last one with FINAL. Otherwise only
the last iteration returns a response (OUTPUT = the number of iterations) and the others
return None. Every iteration but the last is released with RESCHEDULE. Rows without a
correlation id are the direct strategy's fillers.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.done = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            corr = request.correlation_id()
            if corr == 0:
                # A filler of the direct strategy: an empty slot's row, answered and dropped.
                if self.decoupled:
                    request.get_response_sender().send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                responses.append(None if self.decoupled else pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", np.zeros([1], np.int32))]))
                continue
            if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.done[corr] = 0
            total = int(pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().reshape(-1)[0])
            self.done[corr] += 1
            n = self.done[corr]
            last = n >= total
            if not last:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            else:
                del self.done[corr]
            out = pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", np.array([n], np.int32))])
            if self.decoupled:
                flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if last else 0
                request.get_response_sender().send(out, flags=flags)
                responses.append(None)
            else:
                responses.append(out if last else None)
        return None if self.decoupled else responses
