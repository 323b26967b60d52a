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
# A nested fit's start, beyond its steps: a generous figure (6 ms median, 20 ms p90 measured on
# the development VM; benchmarks/RESULTS.md, "A nested fit's start"). The calibration's own
# figure leaves out the start before its first step, so a segment is never planned below this.
FIT_START_SECONDS = 0.05


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

    @property
    def start_seconds(self) -> float:
        """A segment's start as the plans reckon it: the calibration's, at least a nested fit's."""
        return max(self.segment_start, FIT_START_SECONDS)


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
    overhead = min(
        max(segment_start, FIT_START_SECONDS), plan.max_seconds / (4 * max(1, plan.rounds))
    )
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
    least = plan.segment_min_steps(1)
    segments = [
        found.start_seconds + (plan.warmup_steps + least) * step_of(a, found, plan) for a in arms
    ]
    fitting = _arms_within(segments, left / MIN_ROUNDS)
    segment = max(segments[:2]) if segments else 0.0
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
            f"{MIN_ROUNDS * sum(segments[:needed]):.1f} s (a segment up to {segment:.2f} s), "
            "more than the "
            f"{max(0.0, left):.1f} s left of the allowance ({plan.max_seconds:.1f} s)"
        )
        return []
    if fitting < len(arms):
        left_out = ", ".join(arm.name.replace("_", "-") for arm in arms[fitting:])
        result.notes.append(f"left out to fit {MIN_ROUNDS} rounds in the allowance: {left_out}")
    return arms[:fitting]


def rounds_that_fit(plan: Plan, arms: list[Arm], found: Calibration) -> Plan:
    """The plan with as many rounds as segments of at least ``MIN_SEGMENT_STEPS`` measured steps
    (and ``MIN_SEGMENT_SECONDS``) fit in the time left, at least ``MIN_ROUNDS``: planned rounds
    that the allowance cannot hold shrink every segment to a step or two, whose noise (one slow
    step of a busy host) then swamps the input's cost."""
    one_round = sum(
        found.start_seconds
        + plan.warmup_steps * step
        + max(MIN_SEGMENT_SECONDS, MIN_SEGMENT_STEPS * step)
        for step in (step_of(arm, found, plan) for arm in arms)
    )
    left = found.deadline - time.perf_counter()
    fitting = int(left / one_round) if one_round > 0 else plan.rounds
    return replace(plan, rounds=max(MIN_ROUNDS, min(plan.rounds, fitting)))


def step_of(arm: Arm, found: Calibration, plan: Plan) -> float:
    """What a step of ``arm`` is expected to take: the calibrated cached step, or for the real
    input training's own step when it is slower (the input's cost is in it: sized at the cached
    step, the real input's segments overran and a VAE on arrays got two rounds where a band
    needs three)."""
    cached = found.step_seconds or 0.0
    if arm.name == "real":
        return max(cached, plan.real_step_seconds or 0.0)
    return cached


def _arms_within(segments: list[float], seconds: float) -> int:
    """How many of the arms, in their order, one round of ``seconds`` holds."""
    total, count = 0.0, 0
    for segment in segments:
        total += segment
        if total > seconds:
            break
        count += 1
    return count
