"""Writes 1/model.onnx for the stream_encoder example (run from anywhere; needs the `onnx` package).

A stateful streaming encoder in the shape of the encoders of streaming speech recipes: each
request carries one chunk's features, and the sequence's state carries what the encoder
remembers between chunks. Here the memory is an exponential moving average:

  STATE_OUT = DECAY * STATE_IN + (1 - DECAY) * FEATURES     (implicit state, [batch, 4])
  ENCODED   = STATE_OUT
  STEPS_OUT = STEPS_IN + 1                                   (implicit state, [batch, 1])
  STEP      = STEPS_OUT

The state inputs and outputs are the sequence batcher's (config.pbtxt, `state`); clients send
FEATURES only. DECAY is 0.5, so results are exact in FP32.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DECAY = 0.5


def main():
    inits = [
        numpy_helper.from_array(np.array([DECAY], np.float32), "DECAY"),
        numpy_helper.from_array(np.array([1.0 - DECAY], np.float32), "KEEP_NEW"),
        numpy_helper.from_array(np.array([1], np.int64), "ONE"),
    ]
    nodes = [
        helper.make_node("Mul", ["STATE_IN", "DECAY"], ["old"]),
        helper.make_node("Mul", ["FEATURES", "KEEP_NEW"], ["new"]),
        helper.make_node("Add", ["old", "new"], ["STATE_OUT"]),
        helper.make_node("Identity", ["STATE_OUT"], ["ENCODED"]),
        helper.make_node("Add", ["STEPS_IN", "ONE"], ["STEPS_OUT"]),
        helper.make_node("Identity", ["STEPS_OUT"], ["STEP"]),
    ]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "stream_encoder",
        [
            vi("FEATURES", TensorProto.FLOAT, ["batch", 4]),
            vi("STATE_IN", TensorProto.FLOAT, ["batch", 4]),
            vi("STEPS_IN", TensorProto.INT64, ["batch", 1]),
        ],
        [
            vi("ENCODED", TensorProto.FLOAT, ["batch", 4]),
            vi("STEP", TensorProto.INT64, ["batch", 1]),
            vi("STATE_OUT", TensorProto.FLOAT, ["batch", 4]),
            vi("STEPS_OUT", TensorProto.INT64, ["batch", 1]),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tritium-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "1", "model.onnx")
    onnx.save(model, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
