"""The baseline's calibration: a few cached steps, timed before the rounds, that size them —
the rounds' deadline, a first estimate of what a segment costs beyond its measured time, and
the batches a sliced feed must hold for one segment; then, for the default baseline, the arms
and rounds that fit the time left (``that_fit``, ``rounds_that_fit``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from advisor.experiments.feeds.base import MAX_SLICE_BYTES, Feeds, InputError
from advisor.experiments.rounds import Arm, Plan, round_up
from advisor.experiments.segments import Segment, fit_segment
from advisor.noise import MIN_ROUNDS

if TYPE_CHECKING:
    from advisor.experiments.baseline.result import InputBaseline

CALIBRATION_STEPS = 5  # cached steps timed before the rounds
# the default baseline's segments measure at least this long (or this many steps)
MIN_SEGMENT_SECONDS = 0.2
MIN_SEGMENT_STEPS = 5


@dataclass(frozen=True)
class Calibration:
    """What the calibration found: the rounds' ``deadline`` (a ``perf_counter`` time, the final
    restore reserved before it), a first estimate of a segment's ``overhead`` beyond its measured
    time (capped, for the rounds' planning) and the uncapped ``segment_start`` it was measured
    at, the cached ``step_seconds``, and the batches a sliced feed must hold (``need``)."""

    deadline: float
    overhead: float
    need: int
    step_seconds: float | None
    segment_start: float
    seconds: float = 0.0  # what the calibration took, compiling included


def calibrate(
    model: Any, feeds: Feeds, plan: Plan, spe: int, t0: float, restore: Callable[[], None]
) -> Calibration:
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
    restoring = time.perf_counter()
    restore()
    restore_s = time.perf_counter() - restoring
    started = t0 if plan.from_start else (first_tick[0] if first_tick else time.perf_counter())
    deadline = started + plan.max_seconds - (restore_s if plan.from_start else 0.0)
    # What a segment costs beyond its measured time (compilation aside); the rounds replace
    # this first estimate with what they see.
    since = first_tick[0] if first_tick else calibrating
    segment_start = max(0.0, restoring - since - (calibration.seconds if calibration else 0.0))
    overhead = min(segment_start, plan.max_seconds / (4 * max(1, plan.rounds)))
    step_s = (
        calibration.seconds / calibration.steps
        if calibration is not None and calibration.steps > 0 and calibration.seconds > 0
        else None
    )
    return Calibration(
        deadline,
        overhead,
        batches_needed(feeds, plan, calibration, warm),
        step_s,
        segment_start,
        time.perf_counter() - calibrating,
    )


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


def that_fit(arms: list[Arm], found: Calibration, plan: Plan, result: InputBaseline) -> list[Arm]:
    """The arms that ``MIN_ROUNDS`` rounds can hold in the time left, in their order (the cached
    and the real input first), each segment estimated from the calibration: its start and its
    steps. When not even the cached and the real input fit, none: nothing is spent on rounds
    that could give no band, and ``result.stopped`` says why in one line."""
    left = found.deadline - time.perf_counter()
    step_s = found.step_seconds or 0.0
    segment = found.segment_start + (plan.warmup_steps + plan.segment_min_steps(1)) * step_s
    fitting = max(0, int(left / (MIN_ROUNDS * segment))) if segment > 0 else len(arms)
    needed = 2 if any(arm.name == "real" for arm in arms) else 1
    if left <= 0:
        result.stopped = (
            f"calibrating (the first steps on the cached input, compiling included) took "
            f"{found.seconds:.1f} s: nothing is left of the allowance ({plan.max_seconds:.1f} s)"
        )
        return []
    if fitting < needed:
        result.stopped = (
            f"after calibrating, {MIN_ROUNDS} rounds of {needed} arms need about "
            f"{MIN_ROUNDS * needed * segment:.1f} s (a segment {segment:.2f} s), more than the "
            f"{max(0.0, left):.1f} s left of the allowance ({plan.max_seconds:.1f} s)"
        )
        return []
    if fitting < len(arms):
        left_out = ", ".join(arm.name.replace("_", "-") for arm in arms[fitting:])
        result.notes.append(f"left out to fit {MIN_ROUNDS} rounds in the allowance: {left_out}")
    return arms[:fitting]


def rounds_that_fit(plan: Plan, arms: int, found: Calibration) -> Plan:
    """The plan with as many rounds as segments of at least ``MIN_SEGMENT_STEPS`` measured steps
    (and ``MIN_SEGMENT_SECONDS``) fit in the time left, at least ``MIN_ROUNDS``: planned rounds
    that the allowance cannot hold shrink every segment to a step or two, whose noise (one slow
    step of a busy host) then swamps the input's cost."""
    step_s = found.step_seconds or 0.0
    measured = max(MIN_SEGMENT_SECONDS, MIN_SEGMENT_STEPS * step_s)
    segment = found.segment_start + plan.warmup_steps * step_s + measured
    left = found.deadline - time.perf_counter()
    fitting = int(left / (max(1, arms) * segment)) if segment > 0 else plan.rounds
    return replace(plan, rounds=max(MIN_ROUNDS, min(plan.rounds, fitting)))
