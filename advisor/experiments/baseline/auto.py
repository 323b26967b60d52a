"""How long ``baseline="auto"`` measures, and when it does not measure at all.

The default baseline runs after the last epoch. Its measuring time is about
``AUTO_BASELINE_SECONDS`` or ``AUTO_BASELINE_STEPS`` training steps, whichever is longer (a step
count alone is milliseconds of measuring on a fast step, and noise becomes a finding; a time
alone is a handful of steps on a slow one). The whole baseline — calibration, warm-ups, restores
included — stays within ``AUTO_BASELINE_SHARE`` of the fit's own time and the absolute allowance;
a
fit too short for a useful measurement within that share is skipped, and so are inputs it
cannot replay side by side with the cached one. Every skip is recorded with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.experiments.settings import (
    AUTO_BASELINE_MIN_ALLOWANCE,
    AUTO_BASELINE_SECONDS,
    AUTO_BASELINE_SHARE,
    AUTO_BASELINE_STEPS,
    BASELINE_MAX_SECONDS,
    BASELINE_SECONDS,
)

# the rest of the allowance goes to calibration, warm-ups and restores
MEASURED_SHARE_OF_ALLOWANCE = 0.6


@dataclass(frozen=True)
class Sizing:
    """The measuring time and allowance of one baseline, or why it is skipped."""

    seconds: float = 0.0
    max_seconds: float = 0.0
    skipped: str | None = None


def auto_sizing(
    fit_seconds: float,
    step_seconds: float | None,
    *,
    seconds: float | None = None,
    max_seconds: float = BASELINE_MAX_SECONDS,
) -> Sizing:
    """The auto baseline's plan after a fit of ``fit_seconds`` whose steps took ``step_seconds``.

    ``seconds`` (the user's ``baseline_seconds``) replaces the time-or-steps target; the share
    cap and ``max_seconds`` still apply.
    """
    allowance = min(max_seconds, AUTO_BASELINE_SHARE * max(0.0, fit_seconds))
    if allowance < AUTO_BASELINE_MIN_ALLOWANCE:
        return Sizing(
            skipped=(
                f"the fit took {fit_seconds:.1f} s: a baseline within {AUTO_BASELINE_SHARE:.0%} "
                f"of it ({allowance:.1f} s) is too short to measure (baseline='end' measures "
                "anyway)"
            )
        )
    if seconds is None:
        seconds = max(AUTO_BASELINE_SECONDS, AUTO_BASELINE_STEPS * (step_seconds or 0.0))
    return Sizing(
        seconds=min(seconds, MEASURED_SHARE_OF_ALLOWANCE * allowance), max_seconds=allowance
    )


def explicit_sizing(seconds: float | None, max_seconds: float) -> Sizing:
    """``baseline="end"`` / ``"start"``: what the user asked, within the absolute allowance
    only."""
    return Sizing(seconds=BASELINE_SECONDS if seconds is None else seconds, max_seconds=max_seconds)


def mean_step_seconds(windows: list[Any]) -> float | None:
    """Seconds per step over the fit's measured windows (warm-up and profiled ones left out,
    unless they are all there is)."""
    measured = [
        w for w in windows if not (getattr(w, "warmup", False) or getattr(w, "profiled", False))
    ]
    for group in (measured, windows):
        steps = sum(getattr(w, "steps", 0) or 0 for w in group)
        seconds = sum(getattr(w, "seconds", 0.0) or 0.0 for w in group)
        if steps > 0 and seconds > 0:
            return seconds / steps
    return None


MULTI_WORKER = (
    "it runs on single-worker jobs only: the workers of a multi-worker job would have to "
    "train it in lockstep"
)
ONE_SHOT = (
    "a Python generator cannot be replayed, so the real input cannot be measured side by side "
    "with the cached one (pass a tf.data.Dataset, a PyDataset or arrays; baseline='end' compares "
    "with the training throughput instead)"
)
