"""pb_utils.load_model / unload_model / is_model_ready / get_model_dir."""

from .errors import TritonModelException
from .state import STATE

_UNSUPPORTED = "Model control ({}) is not supported by tritium yet."


def _require_name(model_name):
    if not isinstance(model_name, str):
        raise TypeError(f"model_name must be str, got {type(model_name)}")


def load_model(model_name, config="", files=None):
    _require_name(model_name)
    if not isinstance(config, str):
        raise TypeError(f"config must be str, got {type(config)}")
    if files is not None and not isinstance(files, dict):
        raise TypeError(f"files must be a dict, got {type(files)}")
    raise TritonModelException(_UNSUPPORTED.format("load_model"))


def unload_model(model_name, unload_dependents=False):
    _require_name(model_name)
    if not isinstance(unload_dependents, bool):
        raise TypeError(f"unload_dependents must be bool, got {type(unload_dependents)}")
    raise TritonModelException(_UNSUPPORTED.format("unload_model"))


def is_model_ready(model_name, model_version=""):
    _require_name(model_name)
    if not isinstance(model_version, str):
        raise TypeError(f"model_version must be str, got {type(model_version)}")
    raise TritonModelException(_UNSUPPORTED.format("is_model_ready"))


def get_model_dir():
    """The version directory holding model.py, like Triton."""
    return STATE.version_dir
