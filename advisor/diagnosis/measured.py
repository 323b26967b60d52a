"""A finding's measured gain: the what-if candidates its rule names (``whatif:`` in the rule
file), looked up in the ``whatif.table`` fact; the best measured one becomes ``Finding.measured``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.diagnosis.report import Measured


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
        text += f" (±{100 * band:.0f}%)"
    if seconds is not None:
        text += f" in {seconds:.1f} s"
    return text


def measured_for(candidates: Sequence[str], facts: Mapping[str, Any]) -> Measured | None:
    """The largest measured gain among ``candidates``, or None when none was measured."""
    if not candidates:
        return None
    table = facts.get("whatif.table")
    if not isinstance(table, list):
        return None
    rows = [r for r in table if isinstance(r, dict) and r.get("candidate") in candidates
            and isinstance(r.get("speedup"), (int, float)) and not isinstance(r.get("speedup"), bool)]
    if not rows:
        return None
    best = max(rows, key=lambda r: float(r["speedup"]))
    band = best.get("band") if isinstance(best.get("band"), (int, float)) else None
    seconds = best.get("seconds") if isinstance(best.get("seconds"), (int, float)) else None
    text = measured_text(float(best["speedup"]), band, seconds)
    if best.get("changes_optimisation"):
        text += ", per sample; it changes optimisation"
    return Measured(candidate=str(best["candidate"]), label=best.get("label"), speedup=float(best["speedup"]),
                    band=band, outside_band=best.get("outside_band"), seconds=seconds,
                    samples_per_s=best.get("samples_per_s"), changes_optimisation=bool(best.get("changes_optimisation")),
                    text=text)
