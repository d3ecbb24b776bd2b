"""Writes 1/model.onnx for the simple_onnx example (run from anywhere; needs the `onnx` package).

A tiny classifier served natively by tritium's onnxruntime backend:
FEATURES [batch, 16] FP32 -> Dense(8) + ReLU -> Dense(3) -> PROBABILITIES [batch, 3] (softmax)
and CLASS [batch, 1] INT64 (argmax). Weights are seeded, so the file is reproducible.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    rng = np.random.default_rng(2024)
    w1 = (rng.standard_normal((16, 8)) * 0.4).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((8, 3)) * 0.4).astype(np.float32)
    b2 = (rng.standard_normal(3) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"))]
    nodes = [
        helper.make_node("MatMul", ["FEATURES", "W1"], ["h0"]),
        helper.make_node("Add", ["h0", "B1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "W2"], ["h3"]),
        helper.make_node("Add", ["h3", "B2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["PROBABILITIES"], axis=1),
        helper.make_node("ArgMax", ["logits"], ["CLASS"], axis=1, keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "simple_onnx",
        [helper.make_tensor_value_info("FEATURES", TensorProto.FLOAT, ["batch", 16])],
        [
            helper.make_tensor_value_info("PROBABILITIES", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("CLASS", TensorProto.INT64, ["batch", 1]),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tritium-example")
    # IR 8 / opset 13: loadable by any recent onnxruntime, including the npm package's.
    model.ir_version = 8
    onnx.checker.check_model(model)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "1", "model.onnx")
    onnx.save(model, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
