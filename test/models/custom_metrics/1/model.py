"""Custom metrics through pb_utils.MetricFamily, with two instances sharing the families.

initialize() creates a counter `cm_requests{model="custom_metrics",b="x"}`, a gauge
`cm_level{k="v"}` set to -3.5, and a histogram `cm_sizes{k="v"}` with buckets [1, 2.5, 10]; it
records the text of every misuse Triton refuses (kept for the ERRORS output). A family made and
dropped at once (`cm_gone`) leaves /metrics. execute() increments the counter by 1, the gauge by
IN[0] and observes IN[0] in the histogram, then answers with the counter's shared value (COUNT)
and the recorded errors as JSON (ERRORS).
"""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        family = pb_utils.MetricFamily
        self.counter_family = family(name="cm_requests", description="Requests seen", kind=family.COUNTER)
        self.gauge_family = family(name="cm_level", description="A level", kind=family.GAUGE)
        self.histogram_family = family(name="cm_sizes", description="Sizes", kind=family.HISTOGRAM)
        self.counter = self.counter_family.Metric(labels={"model": "custom_metrics", "b": "x"})
        self.gauge = self.gauge_family.Metric(labels={"k": "v"})
        self.histogram = self.histogram_family.Metric(labels={"k": "v"}, buckets=[1.0, 2.5, 10])
        self.gauge.set(-3.5)
        gone = family(name="cm_gone", description="Dropped at once", kind=family.GAUGE)
        gone_metric = gone.Metric()
        del gone
        misuse = [
            lambda: self.counter.increment(-1),
            lambda: self.counter.set(1),
            lambda: self.counter.observe(1),
            lambda: self.histogram.value(),
            lambda: self.histogram.increment(1),
            lambda: self.gauge.observe(1),
            lambda: self.histogram_family.Metric(labels={"k": "w"}),
            lambda: self.counter_family.Metric(labels={"a": "b"}, buckets=[1]),
            lambda: self.counter_family.Metric(labels="a"),
            lambda: family(name="cm_level", description="d", kind=family.COUNTER),
            lambda: family(name="bad name!", description="d", kind=family.GAUGE),
            lambda: self.histogram_family.Metric(labels={"k": "z"}, buckets=[2, 1]),
            lambda: self.counter_family.Metric(labels={"a": 1}),
            lambda: gone_metric.set(1),
        ]
        self.errors = []
        for call in misuse:
            try:
                call()
                self.errors.append("no error")
            except pb_utils.TritonModelException as e:
                self.errors.append(str(e))

    def execute(self, requests):
        responses = []
        for request in requests:
            x = float(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            self.counter.increment(1)
            self.gauge.increment(x)
            self.histogram.observe(x)
            count = np.array([self.counter.value()], dtype=np.float32)
            errors = np.array([json.dumps(self.errors)], dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("COUNT", count), pb_utils.Tensor("ERRORS", errors)])
            )
        return responses
