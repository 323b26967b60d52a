"""What a what-if measured: per candidate, its samples/s per round beside the unchanged
configuration's, the paired speedup with its noise band, or why it was not measured."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from advisor import noise
from advisor.noise import Band
from advisor.stats import median
from advisor.store.schema import WHATIF_CEILINGS as CEILINGS

MEASURED = "measured"
FAILED = "failed"
NOT_APPLICABLE = "not_applicable"  # the change cannot be made to this model or input
NOT_RELEVANT = "not_relevant"  # "auto" left it out: nothing the collectors saw points to it
SKIPPED = "skipped"  # applicable, but the allowance (or Ctrl-C) left no time for it


@dataclass
class CandidateResult:
    """One candidate: its rates per round (aligned with the unchanged arm's) or its reason."""

    name: str
    status: str
    reason: str | None = None
    label: str | None = None
    batch_size: int | None = None
    changes_optimisation: bool = False
    rounds: list[float | None] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0

    def speedup_band(self, unchanged: list[float | None]) -> Band | None:
        """Median of the per-round ratios candidate ÷ unchanged and its band (≥ 3 steady rounds)."""
        return noise.band(noise.paired(self.rounds, unchanged, noise.ratio))

    def speedup(self, unchanged: list[float | None]) -> float | None:
        band = self.speedup_band(unchanged)
        if band is not None:
            return band.value
        return median(noise.paired(self.rounds, unchanged, noise.ratio))

    @property
    def samples_per_s(self) -> float | None:
        return median([r for r in self.rounds if r is not None])


@dataclass
class WhatIfResult:
    """Every candidate a what-if considered, and the unchanged configuration's rates."""

    mode: str
    input_kind: str | None
    batch_size: int | None
    requested: list[str] | str
    budget_seconds: float
    fit_seconds: float | None = None
    unchanged_rounds: list[float | None] = field(default_factory=list)
    candidates: dict[str, CandidateResult] = field(default_factory=dict)
    rounds: int = 0
    seconds: float = 0.0
    stopped: str | None = None
    interrupted: bool = False
    skipped: str | None = None
    error: str | None = None
    backends: Any = None  # the backend what-if's BackendsResult, when "backends" was asked for

    def add(self, result: CandidateResult) -> CandidateResult:
        self.candidates[result.name] = result
        return result

    @property
    def unchanged_samples_per_s(self) -> float | None:
        return median([r for r in self.unchanged_rounds if r is not None])

    def measured(self) -> list[CandidateResult]:
        """Measured candidates (fixes and ceilings), largest speedup first."""
        found = [c for c in self.candidates.values() if c.status == MEASURED]
        return sorted(found, key=lambda c: -(c.speedup(self.unchanged_rounds) or 0.0))

    def table(self) -> list[dict[str, Any]]:
        """Rows for people and tests: candidate, samples/s, speedup, ± band (fraction), status."""
        rows = []
        for c in self.candidates.values():
            band = c.speedup_band(self.unchanged_rounds) if c.status == MEASURED else None
            rows.append(
                {
                    "candidate": c.name,
                    "status": c.status,
                    "samples_per_s": c.samples_per_s,
                    "speedup": c.speedup(self.unchanged_rounds) if c.status == MEASURED else None,
                    "band": band.half_width / band.value
                    if band is not None and band.value
                    else None,
                    "seconds": c.seconds,
                    "reason": c.reason,
                    "label": c.label,
                    "ceiling": c.name in CEILINGS,
                }
            )
        return rows

    def summary(self) -> str:
        """One line: the measured gains, best first."""
        if self.skipped:
            return f"what-if skipped: {self.skipped}"
        parts = []
        for c in self.measured():
            band = c.speedup_band(self.unchanged_rounds)
            speed = c.speedup(self.unchanged_rounds)
            plus = (
                f" (±{band.half_width / band.value:.0%})" if band is not None and band.value else ""
            )
            kind = " (ceiling)" if c.name in CEILINGS else ""
            parts.append(
                f"{c.name} {speed:.2f}×{plus}{kind}"
                if speed is not None
                else f"{c.name} (no paired round)"
            )
        text = "; ".join(parts) or (
            "" if self.backends is not None and not self.candidates else "no candidate measured"
        )
        if self.backends is not None:
            text = "; ".join(t for t in (text, f"backends: {self.backends.summary()}") if t)
        return text + (" — interrupted (Ctrl-C)" if self.interrupted else "")

    def to_record(self) -> Any:
        from advisor.store.schema import WhatIfCandidate, WhatIfRecord

        def rates(values: list[float | None]) -> list[float | None]:
            return [None if r is None else round(r, 3) for r in values]

        return WhatIfRecord(
            t=time.time(),
            mode=self.mode,
            input_kind=self.input_kind,
            batch_size=self.batch_size,
            requested=self.requested,
            rounds=self.rounds or None,
            unchanged_rounds=rates(self.unchanged_rounds) or None,
            candidates=[
                WhatIfCandidate(
                    name=c.name,
                    status=c.status,
                    reason=c.reason,
                    label=c.label,
                    batch_size=c.batch_size,
                    changes_optimisation=c.changes_optimisation,
                    rounds=rates(c.rounds) or None,
                    steps=c.steps or None,
                    seconds=round(c.seconds, 4),
                )
                for c in self.candidates.values()
            ],
            seconds=round(self.seconds, 4),
            budget_seconds=round(self.budget_seconds, 4),
            fit_seconds=None if self.fit_seconds is None else round(self.fit_seconds, 4),
            stopped=self.stopped,
            interrupted=self.interrupted,
            skipped=self.skipped,
            error=self.error,
        )
