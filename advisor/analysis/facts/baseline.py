"""Cached-input and data-only baselines, from the ``baseline`` record of a run.

``input.bound_fraction`` is the share of step time the input costs: with the same model, the same
compiled step and the same number of steps, ``1 − real ÷ cached`` throughput.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

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
    Fact("baseline.real_source", "", "where the real-input throughput comes from: baseline or training (one-shot generators)", "baseline", "str"),
    Fact("baseline.seconds", "s", "wall time the baseline measurements took", "baseline"),
    Fact("baseline.error", "", "why the baseline could not measure (bad input, unsupported model)", "baseline", "str"),
    Fact("input.wait_ms_per_step", "ms", "time per step the model waits for input: batch ÷ real − batch ÷ cached", "baseline"),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import BaselineRecord

    ranks = run.ranks
    records = run.of_type(BaselineRecord, rank=ranks[0] if ranks else None)
    if not records:
        return {}
    record = records[-1]
    out: dict[str, Any] = {"baseline.steps": record.steps}
    if record.error:
        out["baseline.error"] = record.error
    if record.seconds is not None:
        out["baseline.seconds"] = record.seconds
    cached = record.cached_samples_per_s
    data_only = record.data_only_samples_per_s
    source_cached = record.source_cached_samples_per_s
    real = record.real_samples_per_s
    if real is not None:
        out["baseline.real_source"] = "baseline"
    elif cached is not None and len(ranks) <= 1 and facts.get("throughput.samples_per_s"):
        # One-shot generators cannot be replayed: compare with what training itself measured.
        real = float(facts["throughput.samples_per_s"])
        out["baseline.real_source"] = "training"
    for name, value in (
        ("baseline.real_samples_per_s", real),
        ("baseline.cached_samples_per_s", cached),
        ("baseline.data_only_samples_per_s", data_only),
        ("baseline.source_cached_samples_per_s", source_cached),
    ):
        if value is not None:
            out[name] = value
    if real and cached:
        out["input.bound_fraction"] = max(0.0, 1.0 - real / cached)
        if record.batch_size:
            wait = record.batch_size / real - record.batch_size / cached
            out["input.wait_ms_per_step"] = max(0.0, wait) * 1000.0
    if real and data_only:
        out["input.data_only_ratio"] = data_only / real
    if real and source_cached:
        out["input.source_cache_gain"] = max(0.0, source_cached / real - 1.0)
    return out
