"""pb_utils.load_model / unload_model / is_model_ready / get_model_dir.

Each is a call to Node (`model_ctl`, answered by `model_ctl_r`; docs/ipc.md, "Calls from the
model"), waited for through the inbox like a BLS call, so it works from initialize too.
"""

import base64
import itertools

from .errors import TritonModelException
from .messages import MODEL_CTL
from .pybind_args import as_str, bind, is_bool, is_str, mismatch
from .state import STATE

_ids = itertools.count(1)
# cid -> answer (None until it arrives), guarded by the inbox's condition.
_waiting = {}


def route_answer(msg):
    """A `model_ctl_r` from Node; called by the inbox with its condition held."""
    if msg["cid"] in _waiting:
        _waiting[msg["cid"]] = msg


def _call(op, **fields):
    inbox = STATE.inbox
    if inbox is None:
        raise TritonModelException(f"{op} is not available while the model is being auto-completed.")
    cid = next(_ids)
    with inbox.cond:
        _waiting[cid] = None
    STATE.channel.send({"t": MODEL_CTL, "cid": cid, "op": op, **fields})
    inbox.wait_for(lambda: _waiting[cid] is not None)
    with inbox.cond:
        answer = _waiting.pop(cid)
    if answer.get("err") is not None:
        raise TritonModelException(answer["err"])
    return answer


def _bound(name, signature, names, defaults, args, kwargs, checks):
    a = bind(names, defaults, args, kwargs)
    if a is None or not all(check(a[k]) for k, check in checks.items()):
        raise mismatch(name, signature, args, kwargs)
    return a


def load_model(*args, **kwargs):
    a = _bound(
        "load_model",
        "(model_name: str, config: str = '', files: object = None) -> None",
        ("model_name", "config", "files"),
        {"config": "", "files": None},
        args,
        kwargs,
        {"model_name": is_str, "config": is_str},
    )
    files = {}
    for key, value in (a["files"] or {}).items():
        # Triton's repository API carries file contents base64-encoded; Node decodes them.
        files[str(key)] = base64.b64encode(value.encode() if isinstance(value, str) else bytes(value)).decode("ascii")
    _call("load", model=as_str(a["model_name"]), config=as_str(a["config"]), files=files)


def unload_model(*args, **kwargs):
    a = _bound(
        "unload_model",
        "(model_name: str, unload_dependents: bool = False) -> None",
        ("model_name", "unload_dependents"),
        {"unload_dependents": False},
        args,
        kwargs,
        {"model_name": is_str, "unload_dependents": is_bool},
    )
    _call("unload", model=as_str(a["model_name"]), dependents=bool(a["unload_dependents"]))


def is_model_ready(*args, **kwargs):
    a = _bound(
        "is_model_ready",
        "(model_name: str, model_version: str = '') -> bool",
        ("model_name", "model_version"),
        {"model_version": ""},
        args,
        kwargs,
        {"model_name": is_str, "model_version": is_str},
    )
    return bool(_call("ready", model=as_str(a["model_name"]), ver=as_str(a["model_version"])).get("ready"))


def get_model_dir():
    """The version directory holding model.py, like Triton."""
    return STATE.version_dir
