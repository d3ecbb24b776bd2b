"""The pure-Python half of Triton's `triton_python_backend_utils` (pb_utils).

Helpers, dtype tables, BYTES (de)serialisation, ModelConfig and constants. The stub attaches
the classes of c_python_backend_utils (Tensor, InferenceRequest, ...) to this module before
model.py is imported. Error texts of ModelConfig are Triton's, verbatim: QA compares them.
"""

import json
import struct

import numpy as np

TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# TRITONSERVER_DataType codes 1..13, in order.
_CODE_TO_NUMPY = (
    None,
    np.bool_,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.float16,
    np.float32,
    np.float64,
    np.object_,
)

_U32 = struct.Struct("<I")


def serialize_byte_tensor(input_tensor):
    """Length-prefixed C-order serialisation of an object/bytes_ array.

    Returns `bytes`, `()` for an empty array, None for other dtypes (Triton's contract).
    """
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype == np.object_:
        # Only exact `bytes` pass through; anything else is str()-ed, like Triton's helper.
        items = [
            x if type(x) is bytes else str(x).encode("utf-8") for x in input_tensor.reshape(-1, order="C").tolist()
        ]
    elif input_tensor.dtype.type == np.bytes_:
        items = input_tensor.reshape(-1, order="C").tolist()
    else:
        return None
    parts = []
    for item in items:
        parts.append(_U32.pack(len(item)))
        parts.append(item)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor):
    """1-D object array of `bytes` from a length-prefixed buffer."""
    items = []
    offset = 0
    end = len(encoded_tensor)
    while offset < end:
        (length,) = _U32.unpack_from(encoded_tensor, offset)
        offset += 4
        items.append(bytes(encoded_tensor[offset : offset + length]))
        offset += length
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def get_input_tensor_by_name(inference_request, name):
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def _config_entry(model_config, section, name):
    for entry in model_config.get(section, ()):
        if entry["name"] == name:
            return entry
    return None


def get_input_config_by_name(model_config, name):
    return _config_entry(model_config, "input", name)


def get_output_config_by_name(model_config, name):
    return _config_entry(model_config, "output", name)


def using_decoupled_model_transaction_policy(model_config):
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"]["decoupled"]
    return False


def triton_to_numpy_type(data_type):
    for code in range(1, 14):
        if data_type == code:
            return _CODE_TO_NUMPY[code]
    return None


def numpy_to_triton_type(data_type):
    for code in range(1, 13):
        if data_type == _CODE_TO_NUMPY[code]:
            return code
    if data_type == np.object_ or data_type == np.bytes_:
        return 13
    return None


def triton_string_to_numpy(triton_type_string):
    return TRITON_STRING_TO_NUMPY[triton_type_string]


class ModelConfig:
    """The model configuration handed to `auto_complete_config`, as a JSON-backed dict."""

    def __init__(self, model_config):
        self._model_config = json.loads(model_config)

    def as_dict(self):
        return self._model_config

    def _name(self):
        return self._model_config["name"]

    def set_max_batch_size(self, max_batch_size):
        current = self._model_config["max_batch_size"]
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config "
                f"function for model '{self._name()}' specified max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def _check_tensor(self, kind, tensor, allowed, allowed_text):
        for prop in tensor:
            if prop not in allowed:
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than {allowed_text}."
                )
        if "name" not in tensor:
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{self._name()}' is missing 'name' property."
            )
        for prop in ("data_type", "dims"):
            if prop not in tensor:
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' is missing '{prop}' property."
                )

    def _merge_tensor(self, kind, section, tensor):
        """Fill an existing same-name entry (True) after checking it does not conflict."""
        for current in self._model_config[section]:
            if current["name"] != tensor["name"]:
                continue
            if current["data_type"] != "TYPE_INVALID" and current["data_type"] != tensor["data_type"]:
                raise ValueError(
                    f"unable to load model '{self._name()}', configuration expects datatype "
                    f"{current['data_type']} for {kind} '{tensor['name']}', model provides "
                    f"{tensor['data_type']}"
                )
            if current["dims"] and current["dims"] != tensor["dims"]:
                raise ValueError(
                    f"model '{self._name()}', tensor '{tensor['name']}': the model expects "
                    f"dims {tensor['dims']} but the model configuration specifies dims "
                    f"{current['dims']}"
                )
            if (
                kind == "input"
                and "optional" in current
                and "optional" in tensor
                and current["optional"] != tensor["optional"]
            ):
                raise ValueError(
                    f"model '{self._name()}', tensor '{tensor['name']}': the model expects "
                    f"optional {tensor['optional']} but the model configuration specifies "
                    f"optional {current['optional']}"
                )
            current["data_type"] = tensor["data_type"]
            current["dims"] = tensor["dims"]
            if kind == "input" and "optional" in tensor:
                current["optional"] = tensor["optional"]
            return True
        return False

    def add_input(self, input):
        self._check_tensor(
            "input", input, ("name", "data_type", "dims", "optional"), "'name', 'data_type', 'dims' and 'optional'"
        )
        if not self._merge_tensor("input", "input", input):
            self._model_config["input"].append(input)

    def add_output(self, output):
        self._check_tensor("output", output, ("name", "data_type", "dims"), "'name', 'data_type' and 'dims'")
        if not self._merge_tensor("output", "output", output):
            self._model_config["output"].append(output)

    def set_model_transaction_policy(self, transaction_policy_dict):
        for prop in transaction_policy_dict.keys():
            if prop != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name()}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = wanted


TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
