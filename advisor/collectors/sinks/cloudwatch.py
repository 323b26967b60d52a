"""CloudWatch collector: samples/s, samples/$ and utilization as custom metrics, off the training
thread.

``AdvisorCallback(cloudwatch_namespace="Training/Advisor")`` adds it. It listens to the records
the other collectors write (``RunWriter.add_listener``): at each throughput window it queues
SamplesPerSecond and SamplesPerDollar (chief only: every worker records the global rate) and the
mean GPU and CPU utilization sampled since the previous window (each worker, with its
``Worker`` dimension). :class:`~advisor.cloud.cloudwatch.MetricPublisher` sends them in batches
from its own thread; no batch hook, nothing on the training thread but a queue append.
"""

from __future__ import annotations

import threading
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option
from advisor.errors import UsageError
from advisor.store.schema import GpuSample, HostSample, Record, WindowRecord


def namespace(name: str, value: Any) -> str | None:
    """None (off) or a CloudWatch namespace: 1-255 characters, not starting with ``AWS/``."""
    if value is not None and (
        not isinstance(value, str)
        or not value.strip()
        or value.startswith("AWS/")
        or len(value) > 255
    ):
        raise UsageError(
            f"{name} must be a name of 1-255 characters not starting with 'AWS/' (got {value!r})"
        )
    return value


OPTIONS = (
    Option(
        "cloudwatch_namespace",
        "str | None",
        None,
        "publish samples/s, samples/$ and utilization to CloudWatch.",
        namespace,
    ),
)


class CloudWatchCollector(Collector):
    name = "cloudwatch"

    def __init__(self, namespace: str, interval_s: float = 60.0, cloudwatch: Any = None) -> None:
        super().__init__()
        self.namespace = namespace
        self.interval_s = interval_s
        self.cloudwatch = cloudwatch  # a boto3 client (tests); None: made on the sender thread
        self.publisher: Any = None
        self._lock = threading.Lock()
        self._gpu: list[float] = []
        self._cpu: list[float] = []

    def on_train_begin(self) -> None:
        from advisor.cloud.cloudwatch import MetricPublisher

        s = self.session
        dims = {"RunId": s.writer.run_id, "Worker": str(s.rank)}
        self.publisher = MetricPublisher(
            self.namespace, dims, interval_s=self.interval_s, cloudwatch=self.cloudwatch
        )
        s.writer.add_listener(self.on_record)

    def on_record(self, record: Record) -> None:
        """Called for every record written (any thread): arithmetic and a queue append only."""
        if isinstance(record, GpuSample) and record.util is not None:
            with self._lock:
                self._gpu.append(float(record.util))
        elif isinstance(record, HostSample) and record.cpu_percent:
            with self._lock:
                self._cpu.append(sum(record.cpu_percent) / len(record.cpu_percent))
        elif isinstance(record, WindowRecord):
            self._window(record)

    def _window(self, window: WindowRecord) -> None:
        publisher = self.publisher
        if publisher is None:
            return
        with self._lock:
            gpu, cpu = self._gpu, self._cpu
            self._gpu, self._cpu = [], []
        if gpu:
            publisher.put("GPUUtilization", sum(gpu) / len(gpu), "Percent", window.t)
        if cpu:
            publisher.put("CPUUtilization", sum(cpu) / len(cpu), "Percent", window.t)
        if (
            self.session.rank != 0
            or window.warmup
            or window.profiled
            or not window.samples
            or window.seconds <= 0
        ):
            return
        rate = window.samples / window.seconds
        publisher.put("SamplesPerSecond", rate, "Count/Second", window.t)
        price = self.session.price_per_hour
        if price:
            publisher.put("SamplesPerDollar", rate * 3600.0 / price, "Count", window.t)

    def on_train_end(self) -> None:
        if self.publisher is not None:
            self.publisher.close()
