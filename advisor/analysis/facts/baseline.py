"""Cached-input and data-only baselines, from the ``baseline`` record of a run.

``input.bound_fraction`` is the share of step time the input costs: with the same model and the
same compiled step, ``1 − real ÷ cached`` throughput. Records with interleaved rounds give it as
the median of the per-round paired costs, with a noise band (``advisor.noise``); a cost
inside its band is no measurable input cost (``input.bound_outside_band`` False). Older records
(one measurement per arm) give the plain ratio and no band. ``input.removed_speedup`` is the
same pair read the other way (cached ÷ real): the gain no input fix can pass, which rules whose
fix cannot be tried on one host show as their measured ceiling (``ceiling:``, docs/whatif.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor import noise
from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.schema import BaselineRecord

INSIDE_NOTE = "inside the noise band: no measurable input cost"
OUTSIDE_NOTE = "outside the noise band"

FACTS = (
    Fact(
        "baseline.real_samples_per_s",
        "samples/s",
        "training throughput on the real input, baseline window (median of the rounds)",
        "baseline",
    ),
    Fact(
        "baseline.cached_samples_per_s",
        "samples/s",
        "training throughput with input served from memory (the ceiling; median of the rounds)",
        "baseline",
    ),
    Fact(
        "baseline.data_only_samples_per_s",
        "samples/s",
        "input pipeline alone, no training",
        "baseline",
    ),
    Fact(
        "baseline.source_cached_samples_per_s",
        "samples/s",
        "training with a cache right after the file source",
        "baseline",
    ),
    Fact(
        "baseline.steps",
        "steps",
        "measured steps per baseline arm (the fewer of cached and real, all rounds)",
        "baseline",
    ),
    Fact(
        "baseline.rounds",
        "",
        "interleaved rounds the baseline measured (each gives one paired value)",
        "baseline",
    ),
    Fact(
        "baseline.measured_seconds",
        "s",
        "time inside the baseline's measured segments (warm-ups excluded)",
        "baseline",
    ),
    Fact(
        "baseline.stopped",
        "",
        "why the baseline ended before its planned rounds (e.g. its allowance ran out)",
        "baseline",
        "str",
    ),
    Fact(
        "baseline.stalled_rounds",
        "",
        "rounds set aside because the cached or real arm stalled (ran under a third of its median "
        "rate)",
        "baseline",
    ),
    Fact(
        "input.bound_fraction",
        "fraction",
        "1 − real ÷ cached throughput: the share of step time the input costs",
        "baseline",
    ),
    Fact(
        "input.bound_band",
        "fraction",
        "± noise band of input.bound_fraction (order-statistic interval of the rounds' median)",
        "baseline",
    ),
    Fact(
        "input.bound_outside_band",
        "",
        "the input's cost is larger than its noise band (False: no measurable input cost)",
        "baseline",
        "bool",
    ),
    Fact(
        "input.bound_verdict",
        "",
        "the input's cost against its noise band, in words",
        "baseline",
        "str",
    ),
    Fact("input.data_only_ratio", "", "data-only ÷ training throughput", "baseline"),
    Fact("input.data_only_ratio_band", "", "± noise band of input.data_only_ratio", "baseline"),
    Fact(
        "input.source_cache_gain",
        "fraction",
        "throughput gain from caching after the source (reading is the bottleneck)",
        "baseline",
    ),
    Fact(
        "input.source_cache_gain_band",
        "fraction",
        "± noise band of input.source_cache_gain",
        "baseline",
    ),
    Fact(
        "input.source_cache_gain_outside_band",
        "",
        "the gain from a source cache is larger than its noise band",
        "baseline",
        "bool",
    ),
    Fact(
        "baseline.real_source",
        "",
        "where the real-input throughput comes from: baseline or training (one-shot generators)",
        "baseline",
        "str",
    ),
    Fact("baseline.seconds", "s", "wall time the baseline measurements took", "baseline"),
    Fact(
        "baseline.error",
        "",
        "why the baseline could not measure (bad input, unsupported model)",
        "baseline",
        "str",
    ),
    Fact(
        "baseline.skipped",
        "",
        "why the default baseline (baseline='auto') did not run: too short a fit, a multi-worker "
        "job, a one-shot generator",
        "baseline",
        "str",
    ),
    Fact(
        "baseline.mode",
        "",
        "when the baseline ran: auto (after the last epoch, sized to the fit), end, start or api",
        "baseline",
        "str",
    ),
    Fact(
        "input.withheld",
        "",
        "why the input's cost is not a fact: the baseline's skip reason or error, or too few "
        "rounds for a noise band (and what to change)",
        "baseline",
        "str",
    ),
    Fact(
        "baseline.withheld",
        "",
        "why the baseline's figures are missing (its skip reason or error)",
        "baseline",
        "str",
    ),
    Fact(
        "input.wait_ms_per_step",
        "ms",
        "time per step the model waits for input: batch ÷ real − batch ÷ cached",
        "baseline",
    ),
    Fact(
        "input.removed_speedup",
        "×",
        "cached ÷ real throughput (median of the paired rounds): the most any input fix can gain",
        "baseline",
    ),
    Fact(
        "input.removed_speedup_band",
        "fraction",
        "± noise band of input.removed_speedup, as a share of it",
        "baseline",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import BaselineRecord

    record = run.chief_last(BaselineRecord)
    if record is None:
        return {}
    out: dict[str, Any] = {}
    if record.mode:
        out["baseline.mode"] = record.mode
    if record.skipped or record.error:
        _not_measured(record, out)
        return out
    out["baseline.steps"] = record.steps
    for name, value in (
        ("baseline.seconds", record.seconds),
        ("baseline.rounds", record.rounds),
        ("baseline.measured_seconds", record.measured_seconds),
        ("baseline.stopped", record.stopped),
    ):
        if value is not None:
            out[name] = value
    cached = record.cached_samples_per_s
    real, real_rounds = _real_rate(record, facts, len(run.ranks), out)
    for name, value in (
        ("baseline.real_samples_per_s", real),
        ("baseline.cached_samples_per_s", cached),
        ("baseline.data_only_samples_per_s", record.data_only_samples_per_s),
        ("baseline.source_cached_samples_per_s", record.source_cached_samples_per_s),
    ):
        if value is not None:
            out[name] = value
    if real and cached:
        out.update(_bound(record, real, cached, real_rounds))
        out.update(_beyond_the_inputs_work(out, facts, record, real))
    if real:
        _other_arms(record, real, real_rounds, out)
    return out


def _not_measured(record: BaselineRecord, out: dict[str, Any]) -> None:
    """Nothing measured: say why (the rules that need the baseline name the reason)."""
    reason = (
        f"the baseline was skipped: {record.skipped}"
        if record.skipped
        else f"the baseline failed: {record.error}"
    )
    out["baseline.skipped" if record.skipped else "baseline.error"] = record.skipped or record.error
    out["input.withheld"] = out["baseline.withheld"] = reason
    if record.error:
        out["baseline.steps"] = record.steps


def _real_rate(
    record: BaselineRecord, facts: dict[str, Any], workers: int, out: dict[str, Any]
) -> tuple[float | None, list[float | None] | None]:
    """The real input's rate and rounds: the baseline's, else (a one-shot generator cannot be
    replayed) what training itself measured."""
    real, real_rounds = record.real_samples_per_s, record.real_rounds
    if real is not None:
        out["baseline.real_source"] = "baseline"
    elif (
        record.cached_samples_per_s is not None
        and workers <= 1
        and facts.get("throughput.samples_per_s")
        and record.input_kind == "generator"
    ):
        real = float(facts["throughput.samples_per_s"])
        real_rounds = [real] * len(record.cached_rounds or [])
        out["baseline.real_source"] = "training"
    return real, real_rounds


def _other_arms(
    record: BaselineRecord,
    real: float,
    real_rounds: list[float | None] | None,
    out: dict[str, Any],
) -> None:
    """The data-only and source-cached arms against the real input, with their bands."""
    planned = record.rounds is not None
    if record.data_only_samples_per_s:
        out.update(
            _paired(
                "input.data_only_ratio",
                record.data_only_rounds,
                real_rounds,
                noise.ratio,
                record.data_only_samples_per_s / real,
                planned,
            )
        )
    if record.source_cached_samples_per_s:
        gain = _paired(
            "input.source_cache_gain",
            record.source_cached_rounds,
            real_rounds,
            noise.relative_gain,
            record.source_cached_samples_per_s / real - 1.0,
            planned,
        )
        if "input.source_cache_gain" in gain:
            gain["input.source_cache_gain"] = max(0.0, gain["input.source_cache_gain"])
        out.update(gain)


def _bound(
    record: BaselineRecord, real: float, cached: float, real_rounds: list[float | None] | None
) -> dict[str, Any]:
    """input.bound_fraction with its band (from the rounds) and the wait per step."""
    out: dict[str, Any] = {}
    costs = noise.paired(real_rounds or [], record.cached_rounds or [], noise.input_cost)
    band = noise.band(costs)
    if record.rounds:
        out["baseline.stalled_rounds"] = noise.stalled_count(
            real_rounds or [], record.cached_rounds or []
        )
    ceiling = noise.band(noise.paired(record.cached_rounds or [], real_rounds or [], noise.ratio))
    if ceiling is not None and ceiling.value > 0:
        out["input.removed_speedup"] = ceiling.value
        out["input.removed_speedup_band"] = ceiling.half_width / ceiling.value
    if band is not None:
        out["input.bound_fraction"] = max(0.0, band.value)
        out["input.bound_band"] = band.half_width
        out["input.bound_outside_band"] = band.above_zero
        out["input.bound_verdict"] = OUTSIDE_NOTE if band.above_zero else INSIDE_NOTE
    elif record.rounds is not None:
        # Rounds were planned, but fewer than MIN_ROUNDS paired: noise cannot be told from cost.
        out["input.withheld"] = (
            f"the baseline paired only {len(costs)} round(s) of cached and real input within its "
            f"allowance; a cost needs {noise.MIN_ROUNDS} to be told from noise: raise "
            f"baseline_max_seconds (it had {record.budget_seconds or 0:g} s) or baseline_seconds"
        )
    else:  # an older record: one measurement per arm, no band
        out["input.bound_fraction"] = max(0.0, noise.input_cost(real, cached))
        out["input.removed_speedup"] = cached / real
    if record.batch_size:
        wait = record.batch_size / real - record.batch_size / cached
        out["input.wait_ms_per_step"] = max(0.0, wait) * 1000.0
    return out


def _beyond_the_inputs_work(
    out: dict[str, Any], facts: dict[str, Any], record: BaselineRecord, real: float
) -> dict[str, Any]:
    """A cost the input's own work cannot account for is the host's noise, not input cost
    (``noise.beyond_the_inputs_work``): a cached pipeline that delivers 275× the training rate on
    2 cores cannot cost 19% of a step (seen beside a busy core: the rounds drifted with the
    load)."""
    bound, data_only = out.get("input.bound_fraction"), record.data_only_samples_per_s
    if not out.get("input.bound_outside_band") or not isinstance(bound, (int, float)):
        return {}
    cpus = facts.get("context.host_cpu_count")
    most = noise.beyond_the_inputs_work(bound, real, data_only, cpus, facts.get("context.device"))
    if most is None or not data_only:
        return {}
    on = f" on {cpus} CPUs" if isinstance(cpus, int) else ""
    return {
        "input.bound_outside_band": False,
        "input.bound_verdict": (
            f"more than the input's own work can cost: it alone delivers "
            f"{data_only / real:,.0f}× the training rate, at most {most:.1%} of a step"
            f"{on}; the rest is the host's noise"
        ),
    }


def _paired(
    name: str,
    arm: list[float | None] | None,
    real_rounds: list[float | None] | None,
    combine: Any,
    fallback: float,
    planned: bool,
) -> dict[str, Any]:
    """A paired figure with its band (the median of the rounds); an older record's single
    measurement (``fallback``); nothing when rounds were planned but too few paired."""
    band = noise.band(noise.paired(arm or [], real_rounds or [], combine))
    if band is None:
        return {} if planned else {name: fallback}
    out: dict[str, Any] = {name: band.value, f"{name}_band": band.half_width}
    if name == "input.source_cache_gain":
        out[f"{name}_outside_band"] = band.above_zero
    return out
