"""The pure-Python half of triton_python_backend_utils: helpers, tables, ModelConfig texts."""

import json

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils


def test_injected_names_are_attached():
    for name in (
        "TritonError",
        "TritonModelException",
        "Tensor",
        "InferenceRequest",
        "InferenceResponse",
        "Logger",
        "PreferredMemory",
        "TRITONSERVER_MEMORY_GPU",
        "TRITONSERVER_MEMORY_CPU",
        "MetricFamily",
        "load_model",
        "unload_model",
        "is_model_ready",
        "get_model_dir",
    ):
        assert hasattr(pb_utils, name), name


def test_constants():
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2


def test_type_tables():
    assert pb_utils.triton_string_to_numpy("TYPE_BOOL") is bool
    assert pb_utils.triton_string_to_numpy("TYPE_FP16") is np.float16
    assert pb_utils.triton_string_to_numpy("TYPE_STRING") is np.object_
    with pytest.raises(KeyError):
        pb_utils.triton_string_to_numpy("TYPE_BF16")
    assert [pb_utils.triton_to_numpy_type(i) for i in (1, 11, 13)] == [np.bool_, np.float32, np.object_]
    assert pb_utils.triton_to_numpy_type(14) is None
    assert pb_utils.numpy_to_triton_type(np.float32) == 11
    assert pb_utils.numpy_to_triton_type(np.dtype("int64")) == 9
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert pb_utils.numpy_to_triton_type(np.object_) == 13
    assert pb_utils.numpy_to_triton_type(np.complex64) is None


def test_config_lookups_and_decoupled():
    cfg = {"input": [{"name": "A"}], "output": [{"name": "B", "data_type": "TYPE_FP32"}]}
    assert pb_utils.get_input_config_by_name(cfg, "A") == {"name": "A"}
    assert pb_utils.get_output_config_by_name(cfg, "B")["data_type"] == "TYPE_FP32"
    assert pb_utils.get_output_config_by_name(cfg, "X") is None
    assert pb_utils.get_input_config_by_name({}, "A") is None
    assert pb_utils.using_decoupled_model_transaction_policy({}) is False
    assert pb_utils.using_decoupled_model_transaction_policy({"model_transaction_policy": {"decoupled": True}}) is True


def test_serialize_round_trip():
    arr = np.array([[b"ab", "c"], [1, b""]], dtype=np.object_)
    buf = pb_utils.serialize_byte_tensor(arr)
    assert buf == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c\x01\x00\x00\x001\x00\x00\x00\x00"
    back = pb_utils.deserialize_bytes_tensor(buf)
    assert back.dtype == np.object_ and back.tolist() == [b"ab", b"c", b"1", b""]
    assert pb_utils.serialize_byte_tensor(np.array([], dtype=np.object_)) == ()
    assert pb_utils.serialize_byte_tensor(np.array([1.0])) is None
    assert pb_utils.serialize_byte_tensor(np.array([b"x\x00", b"yy"])) == b"\x01\x00\x00\x00x\x02\x00\x00\x00yy"


def _config(**extra):
    base = {"name": "m", "max_batch_size": 4, "input": [], "output": []}
    base.update(extra)
    return pb_utils.ModelConfig(json.dumps(base))


def test_model_config_batch_size_and_scheduler():
    cfg = _config()
    with pytest.raises(ValueError) as e:
        cfg.set_max_batch_size(2)
    assert str(e.value) == (
        "configuration specified max_batch_size 4, but in auto-complete-config "
        "function for model 'm' specified max_batch_size 2"
    )
    cfg.set_max_batch_size(8)
    assert cfg.as_dict()["max_batch_size"] == 8
    cfg.set_dynamic_batching()
    assert cfg.as_dict()["dynamic_batching"] == {}
    with pytest.raises(ValueError) as e:
        _config(sequence_batching={}).set_dynamic_batching()
    assert str(e.value) == (
        "Configuration specified scheduling_choice as 'sequence_batching', but "
        "auto-complete-config function for model 'm' tries to set "
        "scheduling_choice as 'dynamic_batching'"
    )


def test_model_config_add_input_errors():
    cfg = _config(input=[{"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": False}])
    with pytest.raises(ValueError) as e:
        cfg.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [1], "format": 1})
    assert str(e.value) == (
        "input 'X' in auto-complete-config function for model 'm' contains "
        "property other than 'name', 'data_type', 'dims' and 'optional'."
    )
    with pytest.raises(ValueError) as e:
        cfg.add_input({"data_type": "TYPE_FP32", "dims": [1]})
    assert str(e.value) == ("input in auto-complete-config function for model 'm' is missing 'name' property.")
    with pytest.raises(ValueError) as e:
        cfg.add_input({"name": "X", "dims": [1]})
    assert str(e.value) == ("input 'X' in auto-complete-config function for model 'm' is missing 'data_type' property.")
    with pytest.raises(ValueError) as e:
        cfg.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [4]})
    assert str(e.value) == (
        "unable to load model 'm', configuration expects datatype TYPE_FP32 for input 'A', model provides TYPE_INT32"
    )
    with pytest.raises(ValueError) as e:
        cfg.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [5]})
    assert str(e.value) == (
        "model 'm', tensor 'A': the model expects dims [5] but the model configuration specifies dims [4]"
    )
    with pytest.raises(ValueError) as e:
        cfg.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    assert str(e.value) == (
        "model 'm', tensor 'A': the model expects optional True but the model configuration specifies optional False"
    )
    cfg.add_input({"name": "B", "data_type": "TYPE_FP32", "dims": [2]})
    assert [i["name"] for i in cfg.as_dict()["input"]] == ["A", "B"]


def test_model_config_fills_existing_entries():
    cfg = _config(output=[{"name": "O", "data_type": "TYPE_INVALID", "dims": []}])
    cfg.add_output({"name": "O", "data_type": "TYPE_FP32", "dims": [3]})
    assert cfg.as_dict()["output"] == [{"name": "O", "data_type": "TYPE_FP32", "dims": [3]}]
    with pytest.raises(ValueError) as e:
        cfg.add_output({"name": "P", "data_type": "TYPE_FP32", "dims": [3], "optional": True})
    assert str(e.value) == (
        "output 'P' in auto-complete-config function for model 'm' contains "
        "property other than 'name', 'data_type' and 'dims'."
    )
    with pytest.raises(ValueError) as e:
        cfg.add_output({"name": "O", "data_type": "TYPE_INT8", "dims": [3]})
    assert str(e.value) == (
        "unable to load model 'm', configuration expects datatype TYPE_FP32 for output 'O', model provides TYPE_INT8"
    )


def test_model_config_transaction_policy():
    cfg = _config()
    cfg.set_model_transaction_policy({"decoupled": True})
    assert cfg.as_dict()["model_transaction_policy"] == {"decoupled": True}
    with pytest.raises(ValueError) as e:
        cfg.set_model_transaction_policy({"decoupled": False})
    assert str(e.value) == (
        "trying to change decoupled property in auto-complete-config for model 'm', which is already set to 'True'."
    )
    with pytest.raises(ValueError) as e:
        cfg.set_model_transaction_policy({"streaming": True})
    assert str(e.value) == (
        "model transaction property in auto-complete-config function for "
        "model 'm' contains property other than 'decoupled'."
    )
