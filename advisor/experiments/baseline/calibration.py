"""The baseline's calibration: a few cached steps, timed before the rounds, that size them —
the rounds' deadline, a first estimate of what a segment costs beyond its measured time, and
the batches a sliced feed must hold for one segment."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from advisor.experiments.feeds.base import MAX_SLICE_BYTES, Feeds, InputError
from advisor.experiments.rounds import Plan, round_up
from advisor.experiments.segments import Segment, fit_segment

CALIBRATION_STEPS = 5  # cached steps timed before the rounds


def calibrate(
    model: Any, feeds: Feeds, plan: Plan, spe: int, t0: float, restore: Callable[[], None]
) -> tuple[float, float, int]:
    """A few cached steps that compile the step if needed and time it, so that sliced feeds can
    be sized: the rounds' deadline, a first estimate of a segment's overhead, and the batches a
    segment may need. The allowance starts once the first step (compilation) is done, or with the
    baseline when ``plan.from_start``."""
    warm = plan.warmup_steps
    first_tick: list[float] = []
    calibrating = time.perf_counter()
    calibration = fit_segment(
        model,
        feeds.cached,
        finite=False,
        warm=warm,
        seconds=0.0,
        min_steps=min(plan.segment_min_steps(spe), round_up(CALIBRATION_STEPS, spe)),
        deadline=t0 + plan.max_seconds,
        what="the cached input",
        error=InputError,
        first_tick=first_tick,
    )
    restore()
    started = t0 if plan.from_start else (first_tick[0] if first_tick else time.perf_counter())
    deadline = started + plan.max_seconds
    # What a segment costs beyond its measured time (compilation aside); the rounds replace
    # this first estimate with what they see.
    since = first_tick[0] if first_tick else calibrating
    overhead = min(
        max(0.0, time.perf_counter() - since - (calibration.seconds if calibration else 0.0)),
        plan.max_seconds / (4 * max(1, plan.rounds)),
    )
    return deadline, overhead, batches_needed(feeds, plan, calibration, warm)


def batches_needed(feeds: Feeds, plan: Plan, calibration: Segment | None, warm: int) -> int:
    """Batches one segment may need: warm-up, then twice the target time at the calibrated
    cached speed (the real input is not faster), bounded by what a slice may copy."""
    arms = 2 + (feeds.source_cached is not None) + (feeds.data_only is not None)
    need = warm + plan.segment_min_steps(1)
    if calibration is not None and calibration.steps > 0 and calibration.seconds > 0:
        step_s = calibration.seconds / calibration.steps
        need += math.ceil(2.0 * plan.segment_seconds(arms) / step_s)
    batch_bytes = feeds.batch_bytes()
    if batch_bytes > 0:
        need = min(need, max(warm + plan.segment_min_steps(1), MAX_SLICE_BYTES // batch_bytes))
    return need
