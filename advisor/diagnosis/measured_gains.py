"""A finding's measured gain: the what-if candidates its rule names (``whatif:`` in the rule
file), looked up in the ``whatif.table`` fact; the best measured one becomes ``Finding.measured``.

Some fixes cannot be tried on one host in a few seconds (more machines for the input, files
repacked into shards). Their rules name a measured *ceiling* instead (``ceiling:``): what the
same model trained at with the cost the fix removes taken away — the input served from memory
(the baseline's cached arm), or the files' reads cached. A fix can approach its ceiling, not
pass it; a ceiling is shown as one and does not rank the finding (its estimate does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.diagnosis.report import Measured
from advisor.numbers import percent


def speedup_text(speedup: float) -> str:
    """``54×``, ``2.4×``, ``1.05×``: two significant digits, three near 1."""
    if speedup >= 10:
        return f"{speedup:.0f}×"
    if speedup >= 2:
        return f"{speedup:.1f}×"
    return f"{speedup:.2f}×"


def measured_text(speedup: float, band: float | None, seconds: float | None) -> str:
    """``measured: 2.4× (±4%) in 3.1 s``."""
    text = f"measured: {speedup_text(speedup)}"
    if band is not None:
        text += f" (±{percent(band, 0, fraction=True)})"
    if seconds is not None:
        text += f" in {seconds:.1f} s"
    return text


# Ceilings the baseline measures (``ceiling:`` in a rule file), beside the what-if's candidates:
# name -> (speedup fact, its band, samples/s with the cost removed, what was removed). A gain
# fact ("source cache gain": 0.8 = 1.8×) is read as 1 + gain.
BASELINE_CEILINGS: dict[str, tuple[str, str, str, str]] = {
    "input_removed": (
        "input.removed_speedup",
        "input.removed_speedup_band",
        "baseline.cached_samples_per_s",
        "the input served from memory (the cached-input baseline)",
    ),
    "reads_removed": (
        "input.source_cache_gain",
        "input.source_cache_gain_band",
        "baseline.source_cached_samples_per_s",
        "the files' reads cached after the first pass (the baseline's source-cache arm)",
    ),
    "callback_hooks_removed": (
        "callbacks.removed_speedup",
        "callbacks.removed_speedup_band",
        "baseline.cached_samples_per_s",
        "the slow callbacks' batch hooks left out (the baseline's hooks arm)",
    ),
}
CEILING_NOTE = "the fix can approach it, not pass it"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _rows(names: Sequence[str], facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The what-if table's measured rows for these candidates."""
    table = facts.get("whatif.table")
    if not names or not isinstance(table, list):
        return []
    return [
        r
        for r in table
        if isinstance(r, dict) and r.get("candidate") in names and _number(r.get("speedup"))
    ]


def ceiling_row(name: str, facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """A baseline ceiling as a table row, or None when the baseline did not measure it."""
    speedup_fact, band_fact, rate_fact, label = BASELINE_CEILINGS[name]
    speedup, band = _number(facts.get(speedup_fact)), _number(facts.get(band_fact))
    if speedup is None:
        return None
    if (
        name == "reads_removed"
    ):  # a relative gain with an absolute band: as a speedup and a share of it
        speedup = 1.0 + speedup
        band = None if band is None else band / speedup
    return {
        "candidate": name,
        "label": label,
        "speedup": speedup,
        "band": band,
        "seconds": _number(facts.get("baseline.measured_seconds")),
        "samples_per_s": _number(facts.get(rate_fact)),
        "outside_band": None if band is None else speedup * (1.0 - band) > 1.0,
    }


def lead_with_measured(fix: str | None, measured: Measured | None) -> str | None:
    """The fix led by the change that measured best on this run, when one gained beyond its noise
    band: the general advice may name a weaker change first (a parallel map before a cache)."""
    if not fix or measured is None or measured.ceiling or not measured.label:
        return fix
    if measured.speedup <= 1.0 or measured.outside_band is not True:
        return fix  # a gain inside its band (or with none) is not the measured fix
    per_sample = ", per sample" if measured.changes_optimisation else ""
    gain = f"{speedup_text(measured.speedup)}{per_sample}"
    return f"Measured best on this run: {measured.label} ({gain}). {fix}"


def measured_for(
    candidates: Sequence[str], facts: Mapping[str, Any], ceiling: Sequence[str] = ()
) -> Measured | None:
    """The largest measured gain among ``candidates``; failing that, the first measured
    ``ceiling`` (a what-if candidate or a baseline ceiling); None when nothing was measured."""
    rows = _rows(candidates, facts)
    is_ceiling = False
    if not rows:
        for name in ceiling:
            found = (
                [ceiling_row(name, facts)] if name in BASELINE_CEILINGS else _rows([name], facts)
            )
            rows = [r for r in found if r is not None]
            if rows:
                is_ceiling = True
                break
    if not rows:
        return None
    # a gain beyond its noise band before any larger one inside its band
    best = max(rows, key=lambda r: (r.get("outside_band") is True, float(r["speedup"])))
    band, seconds = _number(best.get("band")), _number(best.get("seconds"))
    text = measured_text(float(best["speedup"]), band, seconds)
    if best.get("outside_band") is False and not is_ceiling:
        text += ", inside its noise band: no measured gain"
    if (
        is_ceiling
    ):  # what was taken away is the row's label, shown beside the text as a candidate's is
        text = text.replace("measured:", "measured ceiling:", 1) + f" ({CEILING_NOTE})"
    if best.get("changes_optimisation"):
        text += ", per sample; it changes optimisation"
    return Measured(
        candidate=str(best["candidate"]),
        label=best.get("label"),
        speedup=float(best["speedup"]),
        band=band,
        outside_band=best.get("outside_band"),
        seconds=seconds,
        samples_per_s=best.get("samples_per_s"),
        changes_optimisation=bool(best.get("changes_optimisation")),
        ceiling=is_ceiling,
        text=text,
    )


# A baseline ceiling the what-if measures too, with longer rounds: its candidate wins, as the rules'
# ``ceiling:`` lists order them ([cached_input, input_removed]), under a label saying whose it is.
WHATIF_CEILINGS = {"input_removed": ("cached_input", "the input served from memory (the what-if)")}


def ceilings_for(
    evidence: Iterable[str], facts: Mapping[str, Any], measured: Measured | None = None
) -> list[Measured]:
    """The measured ceilings a finding's evidence bears on (the baseline ceilings whose facts it
    shows), beside its ``measured`` gain and not repeating it: ``Finding.ceilings``."""
    shown = set(evidence)
    ceilings: list[Measured] = []
    for name, ceiling_facts in BASELINE_CEILINGS.items():
        if not shown & set(ceiling_facts[:3]):
            continue  # this finding's evidence does not bear on that ceiling
        if measured is not None and measured.ceiling and measured.candidate == name:
            continue  # it is the finding's measured gain already
        row = ceiling_row(name, facts)
        if name in WHATIF_CEILINGS:
            candidate, label = WHATIF_CEILINGS[name]
            served = _rows([candidate], facts)
            row = {**served[0], "label": label} if served else row
        if row is not None:
            band, seconds = _number(row.get("band")), _number(row.get("seconds"))
            ceilings.append(
                Measured(
                    candidate=str(row["candidate"]),
                    label=row.get("label"),
                    speedup=float(row["speedup"]),
                    band=band,
                    outside_band=row.get("outside_band"),
                    seconds=seconds,
                    samples_per_s=row.get("samples_per_s"),
                    ceiling=True,
                    text=measured_text(float(row["speedup"]), band, seconds),
                )
            )
    return ceilings
