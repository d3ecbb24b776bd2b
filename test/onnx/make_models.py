"""Generates the ONNX test models for test/onnx/*.test.ts with the `onnx` package.

Usage: python make_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx for each model below. Weights are seeded, so every run writes the
same files and tests can recompute expected results with plain arithmetic. IR version 8 and
opset 13 keep the files loadable by any onnxruntime from 1.10 on (the npm package's runtime
can be older than the Python one that the `onnx` package targets by default).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13)]


def save(graph, out_dir, name):
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="tritium-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def identity(out_dir):
    # FP32 with a dynamic batch dimension: the plain pass-through.
    g = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        "identity",
        [vi("INPUT0", TensorProto.FLOAT, ["batch", 4])],
        [vi("OUTPUT0", TensorProto.FLOAT, ["batch", 4])],
    )
    save(g, out_dir, "identity")


def string_identity(out_dir):
    # BYTES in and out (ORT string tensors), variable length per batch item.
    g = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        "string_identity",
        [vi("INPUT0", TensorProto.STRING, ["batch", "n"])],
        [vi("OUTPUT0", TensorProto.STRING, ["batch", "n"])],
    )
    save(g, out_dir, "string_identity")


def fp16_identity(out_dir):
    g = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        "fp16_identity",
        [vi("INPUT0", TensorProto.FLOAT16, ["batch", 3])],
        [vi("OUTPUT0", TensorProto.FLOAT16, ["batch", 3])],
    )
    save(g, out_dir, "fp16_identity")


def add_sub(out_dir):
    # Fixed shape [4], no batch dimension: auto-complete must leave max_batch_size at 0.
    g = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ],
        "add_sub",
        [vi("INPUT0", TensorProto.FLOAT, [4]), vi("INPUT1", TensorProto.FLOAT, [4])],
        [vi("OUTPUT0", TensorProto.FLOAT, [4]), vi("OUTPUT1", TensorProto.FLOAT, [4])],
    )
    save(g, out_dir, "add_sub")


def mlp_weights():
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.25
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((32, 8)).astype(np.float32) * 0.25
    b2 = rng.standard_normal(8).astype(np.float32) * 0.1
    return w1, b1, w2, b2


def mlp_graph(name="mlp"):
    # 16 → 32 (ReLU) → 8, dynamic batch dimension.
    w1, b1, w2, b2 = mlp_weights()
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"))]
    nodes = [
        helper.make_node("MatMul", ["INPUT0", "W1"], ["h0"]),
        helper.make_node("Add", ["h0", "B1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "W2"], ["h3"]),
        helper.make_node("Add", ["h3", "B2"], ["OUTPUT0"]),
    ]
    return helper.make_graph(
        nodes,
        name,
        [vi("INPUT0", TensorProto.FLOAT, ["batch", 16])],
        [vi("OUTPUT0", TensorProto.FLOAT, ["batch", 8])],
        initializer=inits,
    )


def mlp(out_dir):
    save(mlp_graph(), out_dir, "mlp")
    w1, b1, w2, b2 = mlp_weights()
    with open(os.path.join(out_dir, "mlp_weights.json"), "w") as f:
        import json

        json.dump({"w1": w1.tolist(), "b1": b1.tolist(), "w2": w2.tolist(), "b2": b2.tolist()}, f)


def int64_bool(out_dir):
    # INT64 arithmetic, an INT64 → BOOL comparison, and a BOOL input.
    g = helper.make_graph(
        [
            helper.make_node("Add", ["A", "B"], ["SUM"]),
            helper.make_node("Greater", ["A", "B"], ["GT"]),
            helper.make_node("Not", ["MASK"], ["NOT_MASK"]),
        ],
        "int64_bool",
        [
            vi("A", TensorProto.INT64, ["batch", 3]),
            vi("B", TensorProto.INT64, ["batch", 3]),
            vi("MASK", TensorProto.BOOL, ["batch", 3]),
        ],
        [
            vi("SUM", TensorProto.INT64, ["batch", 3]),
            vi("GT", TensorProto.BOOL, ["batch", 3]),
            vi("NOT_MASK", TensorProto.BOOL, ["batch", 3]),
        ],
    )
    save(g, out_dir, "int64_bool")


def scalars(out_dir):
    # Rank-0 tensors (config dims [1]) and a per-row scalar output of a batching model
    # (config dims [1] with reshape []).
    g = helper.make_graph(
        [helper.make_node("Add", ["X", "Y"], ["Z"])],
        "scalar_add",
        [vi("X", TensorProto.FLOAT, []), vi("Y", TensorProto.FLOAT, [])],
        [vi("Z", TensorProto.FLOAT, [])],
    )
    save(g, out_dir, "scalar_add")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    g = helper.make_graph(
        [helper.make_node("ReduceSum", ["X", "axes"], ["S"], keepdims=0)],
        "row_sum",
        [vi("X", TensorProto.FLOAT, ["batch", 4])],
        [vi("S", TensorProto.FLOAT, ["batch"])],
        initializer=[axes],
    )
    save(g, out_dir, "row_sum")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for make in (identity, string_identity, fp16_identity, add_sub, mlp, int64_bool, scalars):
        make(out_dir)


if __name__ == "__main__":
    main()
