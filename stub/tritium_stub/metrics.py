"""pb_utils.MetricFamily / Metric with Triton's semantics and texts.

The values live in Node, shared by every stub of the server (docs/protocol-notes.md, "Custom
metrics"; docs/ipc.md, "Custom metrics"): creating a family is a call (another stub may hold
the name with another kind), `value()` is a call, increment / set / observe and deletions are
messages that need no answer. What the stub can tell alone (argument types, kinds, bucket
order) it refuses here with Triton's words, which name the instance as the core's errors do.

Each MetricFamily object is its own handle, as in Triton: once it is deleted, the Metric
objects made from it refuse every operation, even while another object of the same name lives.

Without a connection to Node (the auto-complete stub, the stub's unit tests) values are kept in
this process (`_Local`), with the same checks.
"""

import enum
import itertools
import json
import re
import threading

from .errors import TritonModelException
from .messages import METRIC
from .pybind_args import MODULE, as_str, bind, is_float, is_str, mismatch
from .state import STATE


class MetricKind(enum.Enum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


_KIND_NAME = {MetricKind.COUNTER: "counter", MetricKind.GAUGE: "gauge", MetricKind.HISTOGRAM: "histogram"}
_CORE_KIND = {
    MetricKind.COUNTER: "TRITONSERVER_METRIC_KIND_COUNTER",
    MetricKind.GAUGE: "TRITONSERVER_METRIC_KIND_GAUGE",
    MetricKind.HISTOGRAM: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}

_DELETED = (
    "Invalid metric operation as the corresponding 'MetricFamily' has been deleted. "
    "The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' "
    "objects have been deleted."
)

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def _core_error(prefix, message):
    """An error of the server core, worded as the Python backend reports it."""
    return TritonModelException(f"{prefix}: Failed to process the request for model '{STATE.name}', message: {message}")


class _Node:
    """Metric operations carried to Node."""

    _ids = itertools.count(1)
    _waiting = {}  # cid -> answer (None until it arrives), guarded by the inbox's condition

    @classmethod
    def route_answer(cls, msg):
        """A `metric_r` from Node; called by the inbox with its condition held."""
        if msg["cid"] in cls._waiting:
            cls._waiting[msg["cid"]] = msg

    @classmethod
    def _call(cls, **fields):
        inbox = STATE.inbox
        cid = next(cls._ids)
        with inbox.cond:
            cls._waiting[cid] = None
        STATE.channel.send({"t": METRIC, "cid": cid, **fields})
        inbox.wait_for(lambda: cls._waiting[cid] is not None)
        with inbox.cond:
            return cls._waiting.pop(cid)

    def family_new(self, name, description, kind):
        answer = self._call(op="family_new", name=name, description=description, kind=_KIND_NAME[kind])
        return answer.get("err")

    def family_del(self, name):
        if STATE.channel is not None:
            STATE.channel.send({"t": METRIC, "op": "family_del", "name": name})

    def metric_new(self, name, labels, buckets):
        msg = {"t": METRIC, "op": "new", "name": name, "labels": labels}
        if buckets is not None:
            msg["buckets"] = buckets
        STATE.channel.send(msg)

    def update(self, name, labels, op, value):
        STATE.channel.send({"t": METRIC, "op": op, "name": name, "labels": labels, "v": value})

    def value(self, name, labels):
        return float(self._call(op="value", name=name, labels=labels)["value"])


class _Local:
    """The same operations on values kept in this process (no Node to share them with)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._families = {}  # name -> [kind, owners, {labels key: value}]

    def family_new(self, name, description, kind):
        with self._lock:
            f = self._families.get(name)
            if f is not None and f[0] is not kind:
                return "Family name already exists with different type"
            if f is None:
                f = self._families[name] = [kind, 0, {}]
            f[1] += 1
        return None

    def family_del(self, name):
        with self._lock:
            f = self._families.get(name)
            if f is not None:
                f[1] -= 1
                if f[1] == 0:
                    del self._families[name]

    def metric_new(self, name, labels, buckets):
        pass

    def update(self, name, labels, op, value):
        f = self._families.get(name)
        if f is None or op == "observe":
            return
        key = json.dumps(labels, sort_keys=True)
        with self._lock:
            f[2][key] = value if op == "set" else f[2].get(key, 0.0) + value

    def value(self, name, labels):
        f = self._families.get(name)
        return 0.0 if f is None else float(f[2].get(json.dumps(labels, sort_keys=True), 0.0))


_LOCAL = _Local()
_NODE = _Node()


def _server():
    return _NODE if STATE.inbox is not None else _LOCAL


class MetricFamily:
    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, *args, **kwargs):
        a = bind(("name", "description", "kind"), {}, args, kwargs)
        if a is None or not is_str(a["name"]) or not is_str(a["description"]) or not isinstance(a["kind"], MetricKind):
            raise mismatch(
                "__init__",
                f"{MODULE}.MetricFamily(name: str, description: str, kind: {MODULE}.MetricKind)",
                args,
                kwargs,
                constructor=True,
            )
        name, description, kind = as_str(a["name"]), as_str(a["description"]), a["kind"]
        if not _NAME.match(name):
            raise _core_error("Error when creating MetricFamily", "Invalid metric name")
        server = _server()
        err = server.family_new(name, description, kind)
        if err is not None:
            raise _core_error("Error when creating MetricFamily", err)
        self._name, self._kind, self._server = name, kind, server
        self._alive = [True]  # shared with this family's Metric objects

    def Metric(self, labels=None, buckets=None):
        labels = {} if labels is None else labels
        if not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if self._kind is MetricKind.HISTOGRAM and buckets is None:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        if self._kind is not MetricKind.HISTOGRAM and buckets is not None:
            raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            # Triton reads the labels as JSON strings; its parser's own words.
            raise _core_error("Error when creating Metric", "attempt to access JSON non-string as string")
        if buckets is not None:
            buckets = [float(b) for b in buckets]
            if any(a >= b for a, b in zip(buckets, buckets[1:])):
                raise _core_error("Error when creating Metric", "Bucket Boundaries must be strictly sorted")
        labels = dict(labels)
        self._server.metric_new(self._name, labels, buckets)
        return Metric(self, labels)

    def __del__(self):
        alive = getattr(self, "_alive", None)
        if alive is None:
            return
        alive[0] = False
        try:
            self._server.family_del(self._name)
        except Exception:  # noqa: BLE001 - the channel may be closed at interpreter exit
            pass


class Metric:
    __slots__ = ("_name", "_kind", "_server", "_alive", "_labels")

    def __init__(self, family, labels):
        self._name, self._kind, self._server = family._name, family._kind, family._server
        self._alive = family._alive
        self._labels = labels

    def _check(self, action, verb, allowed):
        if not self._alive[0]:
            raise TritonModelException(f"Failed to {action}: {_DELETED}")
        if self._kind not in allowed:
            raise _core_error(f"Failed to {action}", f"{_CORE_KIND[self._kind]} does not support {verb}")

    def increment(self, *args):
        value = _value("increment", self, args)
        self._check("increment metric value", "Increment", (MetricKind.COUNTER, MetricKind.GAUGE))
        if self._kind is MetricKind.COUNTER and value < 0:
            raise _core_error(
                "Failed to increment metric value",
                "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.",
            )
        self._server.update(self._name, self._labels, "inc", value)

    def set(self, *args):
        value = _value("set", self, args)
        self._check("set metric value", "Set", (MetricKind.GAUGE,))
        self._server.update(self._name, self._labels, "set", value)

    def observe(self, *args):
        value = _value("observe", self, args)
        self._check("observe metric value", "Observe", (MetricKind.HISTOGRAM,))
        self._server.update(self._name, self._labels, "observe", value)

    def value(self):
        self._check("get metric value", "Value", (MetricKind.COUNTER, MetricKind.GAUGE))
        return self._server.value(self._name, self._labels)


def route_answer(msg):
    _Node.route_answer(msg)


def _value(name, metric, args):
    """The one float argument of increment/set/observe, checked as pybind's caster does."""
    if len(args) != 1 or not is_float(args[0]):
        raise mismatch(name, f"(self: {MODULE}.Metric, arg0: float) -> None", (metric,) + args)
    return float(args[0])
