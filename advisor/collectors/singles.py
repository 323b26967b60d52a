"""Callbacks that run one collector each, for people who want only that measurement.

    model.fit(ds, callbacks=[advisor.ProfilerCallback(profile_steps=(10, 34))])

Each takes the options of :class:`~advisor.collectors.callback.AdvisorCallback` and writes a run of
its own.
"""

from __future__ import annotations

from typing import Any

from advisor.collectors.callback import AdvisorCallback
from advisor.collectors.options import DEFAULT_PROFILE_STEPS


class ThroughputCallback(AdvisorCallback):
    """Only the throughput collector (samples/s windows)."""

    def __init__(self, runs_dir: Any = None, **options: Any) -> None:
        super().__init__(runs_dir, collectors=["throughput"], **options)


class EpochCallback(AdvisorCallback):
    """Only the epoch collector (epoch times, validation split)."""

    def __init__(self, runs_dir: Any = None, **options: Any) -> None:
        super().__init__(runs_dir, collectors=["epochs"], **options)


class ContextCallback(AdvisorCallback):
    """Only the context collector (introspection at train begin)."""

    def __init__(self, runs_dir: Any = None, **options: Any) -> None:
        super().__init__(runs_dir, collectors=["context"], **options)


class ProfilerCallback(AdvisorCallback):
    """Only the profiler: capture steps ``profile_steps`` (start, stop) into a run of its own.

    ``ProfilerCallback(runs_dir="runs", profile_steps=(10, 34))``; ``profile_summary=False`` skips
    the summary at train end.
    """

    def __init__(
        self, runs_dir: Any = None, profile_steps: Any = DEFAULT_PROFILE_STEPS, **options: Any
    ) -> None:
        options.setdefault("log_every_seconds", None)
        super().__init__(runs_dir, collectors=["profiler"], profile_steps=profile_steps, **options)
