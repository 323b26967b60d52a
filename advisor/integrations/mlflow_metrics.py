"""The MLflow metrics of a run, window by window: pure arithmetic over run records.

Shared by the training-side logger (``AdvisorCallback(mlflow=True)``, which feeds records as they
are written) and ``advisor export --to mlflow`` (which feeds them from the run directory), so the
two log the same series under the same keys:

``advisor.samples_per_s``   the window's samples ÷ seconds × ``scale`` (the job's rate: the
                            number of workers when each feeds its own share, else 1)
``advisor.samples_per_dollar``  samples/s × 3600 ÷ USD per hour (when a price is known)
``advisor.step_time_ms``    mean time between step ends in the window
``advisor.gpu_util``        mean GPU utilization (NVML) of the samples in the window, %
``advisor.cpu_util``        mean host CPU utilization (psutil) over the window, %
``advisor.energy_wh``       GPU energy since the run began (NVML counter, else power × time), Wh

Warm-up windows are skipped. The MLflow step of a window is the step count at its end.

:func:`run_params` gives both the run's settings as MLflow params (``advisor.batch_size``,
``advisor.strategy`` as every view names it, ``advisor.backend``…).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.numbers import strategy_label, workers_label
from advisor.store.schema import GpuSample, HostSample, Record, WindowRecord

PREFIX = "advisor."
SERIES = (
    "samples_per_s",
    "samples_per_dollar",
    "step_time_ms",
    "gpu_util",
    "cpu_util",
    "energy_wh",
)
PARAMS = {
    "advisor.batch_size": "global_batch_size",
    "advisor.strategy": "strategy",
    "advisor.backend": "backend",
    "advisor.dtype_policy": "dtype_policy",
    "advisor.steps_per_execution": "steps_per_execution",
    "advisor.jit_compile": "jit_compile",
    "advisor.replicas": "replicas",
}


def run_params(
    context: Mapping[str, Any],
    *,
    workers: int | None,
    tags: Mapping[str, str] | None = None,
    backend: str | None = None,
) -> dict[str, str]:
    """A run's settings as MLflow params, from its ``context.*`` values (the fit's introspection or
    the analysed facts): the strategy and worker count as every view gives them (``single``, not
    the class the run reported; a sweep point's configuration, ``mirrored`` × 2)."""
    params = {name: context.get(f"context.{key}") for name, key in PARAMS.items()}
    params["advisor.backend"] = params["advisor.backend"] or backend
    params["advisor.strategy"] = strategy_label(
        params["advisor.strategy"], dict(tags) if tags else None
    )
    params["advisor.workers"] = (
        workers_label(workers, dict(tags) if tags else None) if workers is not None else None
    )
    return {name: str(value) for name, value in params.items() if value is not None}


@dataclass
class WindowPoint:
    """The metrics of one window: ``values`` by key (without the prefix), MLflow step and time."""

    step: int
    timestamp_ms: int
    values: dict[str, float]

    def keyed(self) -> dict[str, float]:
        return {PREFIX + k: v for k, v in self.values.items()}


@dataclass
class MetricSeries:
    """Feed records in write order; each finished training window yields a :class:`WindowPoint`."""

    scale: float = 1.0  # chief's samples → the job's: workers feeding a share each, else 1
    price_per_hour: float | None = None
    _gpu_util: list[float] = field(default_factory=list)
    _cpu: list[float] = field(default_factory=list)
    _energy_first: dict[int, float] = field(default_factory=dict)
    _energy_last: dict[int, float] = field(default_factory=dict)
    _power_j: dict[int, float] = field(default_factory=dict)
    _power_last: dict[int, tuple[float, float]] = field(default_factory=dict)

    def add(self, record: Record) -> WindowPoint | None:
        if isinstance(record, GpuSample):
            self._gpu(record)
        elif isinstance(record, HostSample):
            if record.cpu_percent:
                self._cpu.append(statistics.fmean(record.cpu_percent))
        elif isinstance(record, WindowRecord):
            return self._window(record)
        return None

    def energy_wh(self) -> float | None:
        """GPU energy since the first sample, summed over GPUs (counter where there is one)."""
        joules = [self._energy_last[i] - self._energy_first[i] for i in self._energy_last]
        joules += [j for i, j in self._power_j.items() if i not in self._energy_last]
        return sum(joules) / 3600.0 if joules else None

    def _gpu(self, s: GpuSample) -> None:
        if s.util is not None:
            self._gpu_util.append(float(s.util))
        if s.energy_j is not None:
            self._energy_first.setdefault(s.index, float(s.energy_j))
            self._energy_last[s.index] = float(s.energy_j)
        elif s.power_w is not None:
            last = self._power_last.get(s.index)
            if last is not None and s.t > last[0]:
                self._power_j[s.index] = self._power_j.get(s.index, 0.0) + (
                    last[1] + s.power_w
                ) / 2 * (s.t - last[0])
            self._power_last[s.index] = (s.t, float(s.power_w))

    def _window(self, w: WindowRecord) -> WindowPoint | None:
        values: dict[str, float] = {}
        if w.warmup or w.profiled or w.seconds <= 0:
            self._gpu_util.clear()
            self._cpu.clear()
            return None
        if w.samples is not None:
            rate = w.samples / w.seconds * self.scale
            values["samples_per_s"] = rate
            if self.price_per_hour:
                values["samples_per_dollar"] = rate * 3600.0 / self.price_per_hour
        if w.step_time_mean is not None:
            values["step_time_ms"] = w.step_time_mean * 1000.0
        if self._gpu_util:
            values["gpu_util"] = statistics.fmean(self._gpu_util)
        if self._cpu:
            values["cpu_util"] = statistics.fmean(self._cpu)
        energy = self.energy_wh()
        if energy is not None:
            values["energy_wh"] = energy
        self._gpu_util.clear()
        self._cpu.clear()
        return (
            WindowPoint(step=w.step_end, timestamp_ms=int(w.t * 1000), values=values)
            if values
            else None
        )


def series_of(
    records: list[Any], scale: float = 1.0, price_per_hour: float | None = None
) -> list[WindowPoint]:
    """Every window's metrics of one worker's records (in file order)."""
    series = MetricSeries(scale, price_per_hour)
    return [p for r in records if (p := series.add(r)) is not None]
