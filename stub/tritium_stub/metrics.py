"""pb_utils.MetricFamily / Metric with Triton's local semantics.

Values live in the stub for now (nothing is exported to Node's /metrics yet). A family shares
its state with every same-name, same-kind family; deleting the Python MetricFamily object
invalidates its Metric objects, as in Triton.
"""

import enum
import json
import threading

from .errors import TritonModelException
from .pybind_args import MODULE, as_str, bind, is_float, is_str, mismatch


class MetricKind(enum.Enum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


_DELETED = (
    "Invalid metric operation as the corresponding 'MetricFamily' has been deleted. "
    "The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' "
    "objects have been deleted."
)

_lock = threading.Lock()
_families = {}  # name -> _FamilyState


class _FamilyState:
    __slots__ = ("name", "description", "kind", "values", "owners")

    def __init__(self, name, description, kind):
        self.name, self.description, self.kind = name, description, kind
        self.values = {}  # labels JSON -> _Value (same labels share a value)
        self.owners = 0  # live MetricFamily objects using this state


class _Value:
    __slots__ = ("value", "count", "sum", "buckets", "bucket_counts")

    def __init__(self, buckets):
        self.value = 0.0
        self.count = 0
        self.sum = 0.0
        self.buckets = buckets
        self.bucket_counts = [0] * len(buckets) if buckets is not None else None


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
        with _lock:
            state = _families.get(name)
            if state is None or state.owners == 0:
                state = _families[name] = _FamilyState(name, description, kind)
            elif state.kind is not kind:
                raise TritonModelException(
                    f"Error when creating MetricFamily: metric family '{name}' already exists "
                    f"with a different kind ({state.kind.name})."
                )
            state.owners += 1
        self._state = state

    def Metric(self, labels=None, buckets=None):
        state = self._state
        labels = {} if labels is None else labels
        if not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise TritonModelException("Error when creating Metric: labels must be a dict of str to str.")
        if state.kind is MetricKind.HISTOGRAM:
            if buckets is None:
                raise TritonModelException("Failed to create metric. Missing required buckets.")
            buckets = [float(b) for b in buckets]
            if any(a >= b for a, b in zip(buckets, buckets[1:])):
                raise TritonModelException("Error when creating Metric: histogram buckets must be strictly increasing.")
        elif buckets is not None:
            raise TritonModelException(
                f"Error when creating Metric: 'buckets' is only allowed for histogram metrics, "
                f"not for {state.kind.name.lower()}."
            )
        key = json.dumps(labels, sort_keys=True)
        with _lock:
            value = state.values.get(key)
            if value is None:
                value = state.values[key] = _Value(buckets)
        return Metric(state, value)

    def __del__(self):
        state = getattr(self, "_state", None)
        if state is None:
            return
        with _lock:
            state.owners -= 1
            if state.owners == 0:
                state.values.clear()
                if _families.get(state.name) is state:
                    del _families[state.name]


class Metric:
    __slots__ = ("_state", "_value")

    def __init__(self, state, value):
        self._state = state
        self._value = value

    def _live(self, action):
        if self._state.owners == 0:
            raise TritonModelException(f"Failed to {action}: {_DELETED}")
        return self._state.kind

    def increment(self, *args):
        value = _value("increment", self, args)
        kind = self._live("increment metric value")
        if kind is MetricKind.HISTOGRAM:
            raise TritonModelException(
                "Failed to increment metric value: increment is not supported for histogram metrics."
            )
        if kind is MetricKind.COUNTER and value < 0:
            raise TritonModelException(
                "Failed to increment metric value: negative increments are not allowed for counter metrics."
            )
        with _lock:
            self._value.value += value

    def set(self, *args):
        value = _value("set", self, args)
        kind = self._live("set metric value")
        if kind is not MetricKind.GAUGE:
            raise TritonModelException(
                f"Failed to set metric value: set is not supported for {kind.name.lower()} metrics."
            )
        self._value.value = float(value)

    def observe(self, *args):
        value = _value("observe", self, args)
        kind = self._live("observe metric value")
        if kind is not MetricKind.HISTOGRAM:
            raise TritonModelException(
                f"Failed to observe metric value: observe is only supported for histogram "
                f"metrics, not for {kind.name.lower()}."
            )
        v = self._value
        with _lock:
            v.count += 1
            v.sum += value
            for i, bound in enumerate(v.buckets):
                if value <= bound:
                    v.bucket_counts[i] += 1

    def value(self):
        kind = self._live("get metric value")
        if kind is MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to get metric value: value is not supported for histogram metrics.")
        return float(self._value.value)


def _value(name, metric, args):
    """The one float argument of increment/set/observe, checked as pybind's caster does."""
    if len(args) != 1 or not is_float(args[0]):
        raise mismatch(name, f"(self: {MODULE}.Metric, arg0: float) -> None", (metric,) + args)
    return float(args[0])
