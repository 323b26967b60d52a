"""Collector names → factories. ``AdvisorCallback(collectors=[...])`` picks from here.

Optional collectors join the defaults when their option asks for them (e.g. ``profile_steps``)
or unless switched off (``baseline=None``, ``telemetry=False``, ``pipeline=False``). A
collector imports its framework (TensorFlow, NVML, MLflow…) only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from advisor.collectors.collector import Collector
from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.collectors.options import AdvisorOptions


def _throughput(o: AdvisorOptions) -> Collector:
    from advisor.collectors.throughput import ThroughputCollector

    return ThroughputCollector(
        window_s=o.window_seconds, warmup_steps=o.warmup_steps, log_every_s=o.log_every_seconds
    )


def _epochs(o: AdvisorOptions) -> Collector:
    from advisor.collectors.epochs import EpochCollector

    return EpochCollector()


def _context(o: AdvisorOptions) -> Collector:
    from advisor.collectors.context import ContextCollector

    return ContextCollector()


def _profiler(o: AdvisorOptions) -> Collector:
    from advisor.collectors.profiler import DEFAULT_PROFILE_STEPS, ProfilerCollector

    return ProfilerCollector(
        profile_steps=o.profile_steps or DEFAULT_PROFILE_STEPS,
        summarize=o.profile_summary,
        timeout_s=o.profile_timeout_seconds,
    )


def _telemetry(o: AdvisorOptions) -> Collector:
    from advisor.collectors.telemetry.collector import TelemetryCollector

    return TelemetryCollector(
        interval_s=o.telemetry_interval_seconds, devices=o.telemetry_devices, mfu=o.mfu
    )


def _baseline(o: AdvisorOptions) -> Collector:
    from advisor.collectors.baseline import BaselineCollector

    return BaselineCollector(
        o.baseline or "end",
        steps=o.baseline_steps,
        source_cache=o.baseline_source_cache,
        seconds=o.baseline_seconds,
        rounds=o.baseline_rounds,
        max_seconds=o.baseline_max_seconds,
    )


def _goodput(o: AdvisorOptions) -> Collector:
    from advisor.collectors.goodput import GoodputCollector

    return GoodputCollector(wrap=o.goodput)


def _compile(o: AdvisorOptions) -> Collector:
    from advisor.collectors.compile_events import CompileCollector

    return CompileCollector()


def _pipeline(o: AdvisorOptions) -> Collector:
    from advisor.collectors.pipeline import PipelineCollector

    return PipelineCollector()


def _memory(o: AdvisorOptions) -> Collector:
    from advisor.collectors.memory import MemoryCollector

    return MemoryCollector()


def _batch_memory(o: AdvisorOptions) -> Collector:
    from advisor.collectors.memory_batch import BatchMemoryCollector

    return BatchMemoryCollector()


def _whatif(o: AdvisorOptions) -> Collector:
    from advisor.collectors.whatif import AUTO, WhatIfCollector

    return WhatIfCollector(
        o.whatif or AUTO,
        max_seconds=o.whatif_max_seconds,
        rounds=o.whatif_rounds,
        seconds=o.whatif_seconds,
    )


def _speed_of_light(o: AdvisorOptions) -> Collector:
    from advisor.collectors.speed_of_light import SpeedOfLightCollector

    return SpeedOfLightCollector()


def _precision(o: AdvisorOptions) -> Collector:
    from advisor.collectors.precision import PrecisionCollector
    from advisor.collectors.whatif import AUTO

    return PrecisionCollector(o.whatif or AUTO, max_seconds=o.whatif_max_seconds)


def _cloudwatch(o: AdvisorOptions) -> Collector:
    from advisor.collectors.sinks.cloudwatch import CloudWatchCollector

    if not o.cloudwatch_namespace:
        raise UsageError("the cloudwatch collector needs cloudwatch_namespace='...'")
    return CloudWatchCollector(o.cloudwatch_namespace)


def _mlflow(o: AdvisorOptions) -> Collector:
    from advisor.collectors.sinks.mlflow import MlflowCollector

    return MlflowCollector(window_s=o.window_seconds)


FACTORIES: dict[str, Callable[[AdvisorOptions], Collector]] = {
    "throughput": _throughput,
    "epochs": _epochs,
    "context": _context,
    "goodput": _goodput,
    "compile": _compile,
    "profiler": _profiler,
    "telemetry": _telemetry,
    "baseline": _baseline,
    "pipeline": _pipeline,
    "memory": _memory,
    "whatif": _whatif,  # after the baseline: it reads the input's measured cost
    "speed_of_light": _speed_of_light,  # after the measurements: it shares no core with them
    "precision": _precision,  # after the speed of light: it reads the fraction
    "batch_memory": _batch_memory,  # last: it trains at larger batches after everything else
    "cloudwatch": _cloudwatch,
    "mlflow": _mlflow,
}

# name → is it on by default for these options?
DEFAULTS: dict[str, Callable[[AdvisorOptions], bool]] = {
    "throughput": lambda o: True,
    "epochs": lambda o: True,
    "context": lambda o: True,
    "goodput": lambda o: True,
    "compile": lambda o: o.goodput,
    "profiler": lambda o: o.profile_steps is not None,
    "telemetry": lambda o: o.telemetry,
    "baseline": lambda o: o.baseline is not None,
    "pipeline": lambda o: o.pipeline,
    "memory": lambda o: o.memory,
    "whatif": lambda o: o.whatif is not None,
    "speed_of_light": lambda o: o.speed_of_light,
    "precision": lambda o: o.whatif is not None,
    "batch_memory": lambda o: o.batch_memory,
    "cloudwatch": lambda o: o.cloudwatch_namespace is not None,
    "mlflow": lambda o: o.mlflow,
}


def build_collectors(options: AdvisorOptions) -> list[Collector]:
    """The collectors ``options.collectors`` names (or holds), else the defaults for the options."""
    spec = options.collectors
    names: list[str | Collector] = (
        [n for n, on in DEFAULTS.items() if on(options)] if spec is None else list(spec)
    )
    out: list[Collector] = []
    for item in names:
        if isinstance(item, Collector):
            out.append(item)
            continue
        factory = FACTORIES.get(item)
        if factory is None:
            raise UsageError(f"unknown collector {item!r}; known: {', '.join(sorted(FACTORIES))}")
        out.append(factory(options))
    return out
