"""Model control probe: execute sleeps MS ms and answers GEN, the config's GENERATION parameter,
so a client can tell which load serves it; a request parameter "mark" names a file created when
execute() starts. initialize sleeps INIT_SLEEP_S seconds and raises
when FAIL_INIT is set (both config parameters, so a load's config override can set them)."""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _param(config, key, default):
    return config.get("parameters", {}).get(key, {}).get("string_value", default)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        time.sleep(float(_param(config, "INIT_SLEEP_S", "0")))
        if _param(config, "FAIL_INIT", ""):
            raise RuntimeError(f"initialize failed on purpose: {_param(config, 'FAIL_INIT', '')}")
        self.generation = int(_param(config, "GENERATION", "0"))

    def execute(self, requests):
        out = []
        for r in requests:
            ms = int(pb_utils.get_input_tensor_by_name(r, "MS").as_numpy()[0])
            mark = json.loads(r.parameters() or "{}").get("mark")
            if mark:
                with open(mark, "w") as f:
                    f.write("started")
            time.sleep(ms / 1000)
            gen = np.array([self.generation], dtype=np.int32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("GEN", gen)]))
        return out
