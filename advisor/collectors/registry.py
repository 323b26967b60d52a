"""Collector names → factories. ``AdvisorCallback(collectors=[...])`` picks from here.

Optional collectors join the defaults when their option asks for them (e.g. ``baseline="end"``)
or, for telemetry, unless switched off with ``telemetry=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from advisor.collectors.base import Collector
from advisor.errors import UsageError


def _throughput(opts: dict[str, Any]) -> Collector:
    from advisor.collectors.throughput import ThroughputCollector

    return ThroughputCollector(
        window_s=opts.get("window_s", 10.0),
        warmup_steps=opts.get("warmup_steps", 5),
        log_every_s=opts.get("log_every_s", 60.0),
    )


def _epochs(opts: dict[str, Any]) -> Collector:
    from advisor.collectors.epochs import EpochCollector

    return EpochCollector()


def _context(opts: dict[str, Any]) -> Collector:
    from advisor.collectors.context import ContextCollector

    return ContextCollector()


def _baseline(opts: dict[str, Any]) -> Collector:
    from advisor.collectors import baseline as b

    return b.BaselineCollector(
        opts.get("baseline") or "end",
        steps=opts.get("baseline_steps", b.DEFAULT_MIN_STEPS),
        source_cache=opts.get("baseline_source_cache", True),
        seconds=opts.get("baseline_seconds", b.DEFAULT_SECONDS),
        rounds=opts.get("baseline_rounds", b.DEFAULT_ROUNDS),
        max_seconds=opts.get("baseline_max_seconds", b.DEFAULT_MAX_SECONDS),
    )


FACTORIES: dict[str, Callable[[dict[str, Any]], Collector]] = {
    "throughput": _throughput,
    "epochs": _epochs,
    "context": _context,
    "profiler": lambda o: __import__("advisor.collectors.profiler", fromlist=["_"]).profiler_from_options(o),
    "telemetry": lambda o: __import__("advisor.collectors.telemetry", fromlist=["_"]).telemetry_from_options(o),
    "baseline": lambda o: _baseline(o),
    "pipeline": lambda o: __import__("advisor.collectors.pipeline", fromlist=["_"]).PipelineCollector(),
}

# name → predicate on the options: is it on by default for these options?
DEFAULTS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "throughput": lambda o: True,
    "epochs": lambda o: True,
    "context": lambda o: True,
    "profiler": lambda o: o.get("profile_steps") is not None,
    "telemetry": lambda o: o.get("telemetry", True) is not False,
    "baseline": lambda o: o.get("baseline") not in (None, False, "", "off", "none"),
    "pipeline": lambda o: o.get("pipeline", True) is not False,
}


def build_collectors(spec: Sequence[str | Collector] | None, options: dict[str, Any]) -> list[Collector]:
    if spec is None:
        names: list[str | Collector] = [n for n, on in DEFAULTS.items() if on(options)]
    else:
        names = list(spec)
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
