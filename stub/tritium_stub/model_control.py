"""pb_utils.load_model / unload_model / is_model_ready / get_model_dir."""

from .errors import TritonModelException
from .pybind_args import bind, is_bool, is_str, mismatch
from .state import STATE

_UNSUPPORTED = "Model control ({}) is not supported by tritium yet."


def _bound(name, signature, names, defaults, args, kwargs, checks):
    a = bind(names, defaults, args, kwargs)
    if a is None or not all(check(a[k]) for k, check in checks.items()):
        raise mismatch(name, signature, args, kwargs)
    return a


def load_model(*args, **kwargs):
    _bound(
        "load_model",
        "(model_name: str, config: str = '', files: object = None) -> None",
        ("model_name", "config", "files"),
        {"config": "", "files": None},
        args,
        kwargs,
        {"model_name": is_str, "config": is_str},
    )
    raise TritonModelException(_UNSUPPORTED.format("load_model"))


def unload_model(*args, **kwargs):
    _bound(
        "unload_model",
        "(model_name: str, unload_dependents: bool = False) -> None",
        ("model_name", "unload_dependents"),
        {"unload_dependents": False},
        args,
        kwargs,
        {"model_name": is_str, "unload_dependents": is_bool},
    )
    raise TritonModelException(_UNSUPPORTED.format("unload_model"))


def is_model_ready(*args, **kwargs):
    _bound(
        "is_model_ready",
        "(model_name: str, model_version: str = '') -> bool",
        ("model_name", "model_version"),
        {"model_version": ""},
        args,
        kwargs,
        {"model_name": is_str, "model_version": is_str},
    )
    raise TritonModelException(_UNSUPPORTED.format("is_model_ready"))


def get_model_dir():
    """The version directory holding model.py, like Triton."""
    return STATE.version_dir
