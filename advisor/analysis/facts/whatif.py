"""Measured what-if facts, from the ``whatif`` record of a run.

For each candidate change ``<name>`` (``parallel_map``, ``cache_map``, ``jit_compile``…):
``whatif.<name>.speedup`` is the median over the interleaved rounds of the paired ratio
candidate ÷ unchanged samples/s; ``whatif.<name>.band`` the ± half-width of its order-statistic
band as a fraction of the speedup (``advisor.noise``); ``whatif.<name>.seconds`` what
trying it cost. A candidate that was not measured has a ``status`` and a ``reason`` instead.
``whatif.table`` holds every candidate as a row for the renderers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor import noise
from advisor.analysis.registry import DeriveContext, Fact
from advisor.stats import median
from advisor.store.schema import WHATIF_CANDIDATES as CANDIDATES
from advisor.store.schema import WHATIF_CEILINGS as CEILINGS  # rows say so; never whatif.best

if TYPE_CHECKING:
    from advisor.store.reader import Run


def _candidate_facts(name: str) -> tuple[Fact, ...]:
    what = name.replace("_", " ")
    return (
        Fact(
            f"whatif.{name}.speedup",
            "×",
            f"samples/s with {what} ÷ unchanged, median of the paired rounds",
            "whatif",
        ),
        Fact(
            f"whatif.{name}.band",
            "fraction",
            f"± noise band of whatif.{name}.speedup, as a share of it",
            "whatif",
        ),
        Fact(
            f"whatif.{name}.outside_band",
            "",
            f"the gain of {what} is larger than its noise band",
            "whatif",
            "bool",
        ),
        Fact(
            f"whatif.{name}.seconds",
            "s",
            f"what trying {what} cost: its setup and its segments",
            "whatif",
        ),
        Fact(
            f"whatif.{name}.samples_per_s",
            "samples/s",
            f"training throughput with {what} (median of the rounds)",
            "whatif",
        ),
        Fact(
            f"whatif.{name}.status",
            "",
            f"{what}: measured, failed, not_applicable, not_relevant or skipped",
            "whatif",
            "str",
        ),
        Fact(
            f"whatif.{name}.reason",
            "",
            f"why {what} was not measured, or how it failed",
            "whatif",
            "str",
        ),
    )


FACTS = (
    Fact("whatif.seconds", "s", "wall time of the whole what-if", "whatif"),
    Fact(
        "whatif.allowance_seconds",
        "s",
        "the allowance the what-if stayed within (whatif_max_seconds or its default; "
        "formerly whatif.budget_seconds)",
        "whatif",
    ),
    Fact(
        "whatif.share_of_fit",
        "fraction",
        "the what-if's wall time ÷ the fit's training time",
        "whatif",
    ),
    Fact(
        "whatif.unchanged_samples_per_s",
        "samples/s",
        "the unchanged configuration during the what-if (median)",
        "whatif",
    ),
    Fact("whatif.rounds", "", "interleaved rounds the what-if measured", "whatif"),
    Fact("whatif.measured", "", "candidates the what-if measured (fixes, not ceilings)", "whatif"),
    Fact("whatif.stopped", "", "why the what-if ended before its planned rounds", "whatif", "str"),
    Fact(
        "whatif.interrupted",
        "",
        "Ctrl-C ended the what-if (what was measured is kept)",
        "whatif",
        "bool",
    ),
    Fact(
        "whatif.skipped",
        "",
        "why the what-if tried nothing (multi-worker job, an input it cannot replay)",
        "whatif",
        "str",
    ),
    Fact(
        "whatif.best",
        "",
        "the measured fix with the largest gain (a ceiling is not a fix)",
        "whatif",
        "str",
    ),
    Fact("whatif.best_speedup", "×", "the largest measured gain", "whatif"),
    Fact(
        "whatif.table",
        "",
        "every candidate: samples/s, gain, band, cost, status and reason",
        "whatif",
        "list",
    ),
) + tuple(f for name in CANDIDATES for f in _candidate_facts(name))


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import WhatIfRecord

    record = run.chief_last(WhatIfRecord)
    if record is None:
        return {}
    out: dict[str, Any] = {"whatif.interrupted": record.interrupted}
    for name, value in (
        ("whatif.seconds", record.seconds),
        ("whatif.allowance_seconds", record.budget_seconds),
        ("whatif.rounds", record.rounds),
        ("whatif.stopped", record.stopped),
        ("whatif.skipped", record.skipped),
    ):
        if value is not None:
            out[name] = value
    if record.seconds is not None and record.fit_seconds:
        out["whatif.share_of_fit"] = record.seconds / record.fit_seconds
    unchanged = record.unchanged_rounds or []
    rate = median([r for r in unchanged if r is not None])
    if rate is not None:
        out["whatif.unchanged_samples_per_s"] = rate
    table: list[dict[str, Any]] = []
    for candidate in record.candidates:
        if candidate.name not in CANDIDATES:
            continue  # a newer writer's candidate: no fact for it, but nothing misread
        row = _candidate(candidate, unchanged, out)
        table.append(row)
    measured = [r for r in table if r["speedup"] is not None and not r["ceiling"]]
    out["whatif.measured"] = len(measured)
    if measured:
        best = max(measured, key=lambda r: r["speedup"])
        out["whatif.best"], out["whatif.best_speedup"] = best["candidate"], best["speedup"]
    out["whatif.table"] = sorted(
        table, key=lambda r: (r["speedup"] is None, -(r["speedup"] or 0.0))
    )
    return out


def _candidate(
    candidate: Any, unchanged: list[float | None], out: dict[str, Any]
) -> dict[str, Any]:
    """Facts of one candidate (into ``out``) and its table row."""
    prefix = f"whatif.{candidate.name}"
    out[f"{prefix}.status"] = candidate.status
    if candidate.reason:
        out[f"{prefix}.reason"] = candidate.reason
    if candidate.seconds is not None:
        out[f"{prefix}.seconds"] = candidate.seconds
    row: dict[str, Any] = {
        "candidate": candidate.name,
        "label": candidate.label,
        "status": candidate.status,
        "reason": candidate.reason,
        "seconds": candidate.seconds,
        "samples_per_s": None,
        "speedup": None,
        "band": None,
        "outside_band": None,
        "changes_optimisation": candidate.changes_optimisation,
        "ceiling": candidate.name in CEILINGS,
    }
    rates = candidate.rounds or []
    if candidate.status != "measured" or not rates:
        return row
    rate = median([r for r in rates if r is not None])
    ratios = noise.paired(rates, unchanged, noise.ratio)
    band = noise.band(ratios)
    speedup = band.value if band is not None else median(ratios)
    if rate is not None:
        out[f"{prefix}.samples_per_s"] = row["samples_per_s"] = rate
    if speedup is not None:
        out[f"{prefix}.speedup"] = row["speedup"] = speedup
    if band is not None and band.value > 0:
        gain = noise.band([r - 1.0 for r in ratios])
        out[f"{prefix}.band"] = row["band"] = band.half_width / band.value
        out[f"{prefix}.outside_band"] = row["outside_band"] = bool(
            gain is not None and gain.above_zero
        )
    return row
