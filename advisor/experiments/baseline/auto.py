"""How long ``baseline="auto"`` measures, and when it does not measure at all.

The default baseline runs after the last epoch. Its measuring time is about
``AUTO_BASELINE_SECONDS`` or ``AUTO_BASELINE_STEPS`` training steps, whichever is longer (a step
count alone is milliseconds of measuring on a fast step, and noise becomes a finding; a time
alone is a handful of steps on a slow one). The whole baseline — calibration, warm-ups, restores
included — stays within ``AUTO_BASELINE_SHARE`` of the measurement allowance (a tenth of a fit of
a minute or more; ``settings.measurement_allowance``) and the absolute allowance. It does not
start when the allowance cannot hold a meaningful measurement: a fit too short, or training's
own step time too long for the calibration and the three rounds a noise band needs
(:func:`minimum_seconds`). Inputs it cannot replay side by side with the cached one are skipped
too. Every skip is recorded with its one-line reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.experiments.baseline.calibration import CALIBRATION_STEPS, FIT_START_SECONDS
from advisor.experiments.settings import (
    AUTO_BASELINE_MIN_ALLOWANCE,
    AUTO_BASELINE_SECONDS,
    AUTO_BASELINE_SHARE,
    AUTO_BASELINE_STEPS,
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    BASELINE_SECONDS,
    measurement_allowance,
)
from advisor.noise import MIN_ROUNDS

# the rest of the allowance goes to calibration, warm-ups and restores
MEASURED_SHARE_OF_ALLOWANCE = 0.6
TRAINING_ARMS = 2  # the cached and the real input: the fewest arms that measure the input's cost


@dataclass(frozen=True)
class Sizing:
    """The measuring time and allowance of one baseline, or why it is skipped."""

    seconds: float = 0.0
    max_seconds: float = 0.0
    skipped: str | None = None
    step_seconds: float | None = None  # training's own step time (the real input's step)


def minimum_seconds(
    step_seconds: float,
    warm: int = 1,
    min_steps: int = BASELINE_MIN_STEPS,
    rounds: int = BASELINE_ROUNDS,
) -> float:
    """The least time a baseline with a noise band takes at ``step_seconds`` a step: the
    calibration's steps, then ``MIN_ROUNDS`` rounds of the two training arms, each segment a
    fit's start, its warm-up and its share of ``min_steps``."""
    segment_steps = max(1, math.ceil(min_steps / max(1, rounds)))
    calibration = (warm + min(segment_steps, CALIBRATION_STEPS)) * step_seconds
    segment = FIT_START_SECONDS + (warm + segment_steps) * step_seconds
    return calibration + MIN_ROUNDS * TRAINING_ARMS * segment


def auto_sizing(
    fit_seconds: float,
    step_seconds: float | None,
    *,
    seconds: float | None = None,
    max_seconds: float = BASELINE_MAX_SECONDS,
    warm: int = 1,
    min_steps: int = BASELINE_MIN_STEPS,
    rounds: int = BASELINE_ROUNDS,
) -> Sizing:
    """The auto baseline's plan after a fit of ``fit_seconds`` whose steps took ``step_seconds``
    (``warm`` steps of warm-up per segment, ``min_steps`` measured steps per arm over ``rounds``
    rounds, as the plan will have them).

    ``seconds`` (the user's ``baseline_seconds``) replaces the time-or-steps target; the share
    cap and ``max_seconds`` still apply.
    """
    share = measurement_allowance(fit_seconds)
    allowance = min(max_seconds, AUTO_BASELINE_SHARE * share)
    if allowance < AUTO_BASELINE_MIN_ALLOWANCE:
        return Sizing(
            skipped=(
                f"the fit took {fit_seconds:.1f} s: a baseline within its share of it "
                f"({allowance:.1f} s) is too short to measure (baseline='end' measures anyway)"
            )
        )
    if step_seconds:
        least = minimum_seconds(step_seconds, warm, min_steps, rounds)
        if least > allowance:
            return Sizing(
                skipped=(
                    f"a step takes {step_seconds:.2f} s: {MIN_ROUNDS} rounds of the cached and "
                    f"the real input need about {least:.0f} s, more than its allowance of "
                    f"{allowance:.1f} s (baseline='end' measures anyway)"
                )
            )
    if seconds is None:
        seconds = max(AUTO_BASELINE_SECONDS, AUTO_BASELINE_STEPS * (step_seconds or 0.0))
    return Sizing(
        seconds=min(seconds, MEASURED_SHARE_OF_ALLOWANCE * allowance),
        max_seconds=allowance,
        step_seconds=step_seconds,
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
