"""Cached-input and data-only baselines. Derivations: issue 4 (input pipeline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("baseline.real_samples_per_s", "samples/s", "training throughput on the real input, baseline window", "baseline"),
    Fact("baseline.cached_samples_per_s", "samples/s", "training throughput with input served from memory (the ceiling)", "baseline"),
    Fact("baseline.data_only_samples_per_s", "samples/s", "input pipeline alone, no training", "baseline"),
    Fact("baseline.source_cached_samples_per_s", "samples/s", "training with a cache right after the file source", "baseline"),
    Fact("baseline.steps", "steps", "steps per baseline measurement", "baseline"),
    Fact("input.bound_fraction", "fraction", "1 − real ÷ cached throughput: the share of step time the input costs", "baseline"),
    Fact("input.data_only_ratio", "", "data-only ÷ training throughput", "baseline"),
    Fact("input.source_cache_gain", "fraction", "throughput gain from caching after the source (reading is the bottleneck)", "baseline"),
)


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
