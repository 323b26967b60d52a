"""The baseline's measuring loop: time-boxed segments, interleaved arms, repeated rounds.

An *arm* is one way of feeding the model (the cached first batch, the real input, the input with
a cache after its file source) or of pulling the input alone (data-only). A *segment* measures one
arm for a target time (``segment_s``, and at least ``min_steps`` steps) after its own warm-up. A
*round* measures every arm once; rounds alternate their order (A B C, C B A, …) so that drift and
load hit every arm alike, and each round gives one paired value per comparison. The whole
measurement stays inside a time allowance: segments shrink so that the planned rounds fit, are
capped so that ``MIN_ROUNDS`` rounds fit, and later rounds start only while one more fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from advisor.experiments.segments import Segment
from advisor.noise import MIN_ROUNDS


@dataclass(frozen=True)
class Plan:
    """How long to measure: ``seconds`` over all arms and rounds, at least ``min_steps`` measured
    steps per arm, ``rounds`` rounds, everything after a short calibration within
    ``max_seconds``."""

    seconds: float
    min_steps: int
    rounds: int
    max_seconds: float
    warmup_steps: int
    # the allowance counts from the measurement's start, compiling included (the default
    # baseline: its share of the fit is the user's time); else from the first compiled step
    from_start: bool = False
    # training's own step time, when known: what a step on the real input costs (the cached
    # step the calibration times is faster by the input's cost)
    real_step_seconds: float | None = None

    def segment_seconds(self, arms: int) -> float:
        return self.seconds / max(1, self.rounds * arms)

    def segment_min_steps(self, multiple: int) -> int:
        return round_up(math.ceil(self.min_steps / max(1, self.rounds)), multiple)


# An arm measures one segment: (target seconds, minimum steps, hard deadline) → Segment or None.
Measure = Callable[[float, int, float], "Segment | None"]


@dataclass
class Arm:
    name: str
    measure: Measure
    trains: bool  # trains the model: its state is restored after the round
    segments: list[Segment | None] = field(default_factory=list)


@dataclass
class Outcome:
    rounds: int = 0
    measured_seconds: float = 0.0
    stopped: str | None = None


def round_up(value: int, multiple: int) -> int:
    value = max(int(value), 1)
    return -(-value // multiple) * multiple


def run_rounds(
    arms: list[Arm],
    plan: Plan,
    deadline: float,
    restore: Callable[[], None],
    overhead_s: float = 0.0,
) -> Outcome:
    """Measure every arm once per round, alternating the order, until ``plan.rounds`` rounds are
    done or the allowance (``deadline``, a ``perf_counter`` time) would be exceeded.

    Every segment first sets aside what each remaining segment costs beyond its measured time
    (``fit`` set-up, warm-up): ``overhead_s`` at first (from the calibration), then the largest
    seen so far. Its target time shrinks so that all planned rounds fit the allowance (the
    rounds make the band; a shorter segment only widens it), and it is capped at its share of the
    time left for the first MIN_ROUNDS rounds, however many steps it still needs. The allowance
    is hard: a machine that stalls a step for longer than a share can leave fewer than
    MIN_ROUNDS rounds, and then the figure has no band (and no verdict).
    """
    outcome = Outcome()
    segment_s = plan.segment_seconds(len(arms))
    round_times: list[float] = []
    overheads: list[float] = []  # per segment: wall time beyond the measured time
    for index in range(plan.rounds):
        now = time.perf_counter()
        if index >= MIN_ROUNDS and round_times and now + max(round_times) > deadline:
            outcome.stopped = (
                f"the time allowance ({plan.max_seconds:g} s) had room for {index} of "
                f"{plan.rounds} rounds"
            )
            break
        if now >= deadline:
            outcome.stopped = (
                f"the time allowance ({plan.max_seconds:g} s) ran out after {index} rounds"
            )
            break
        started = now
        order = arms if index % 2 == 0 else arms[::-1]
        try:
            for position, arm in enumerate(order):
                now = time.perf_counter()
                # nothing could be measured: the round's other arms get no segment
                if now >= deadline:
                    arm.segments.append(None)
                    continue
                left = (max(MIN_ROUNDS - index, 1) * len(arms)) - position
                overhead = max(overheads) if overheads else overhead_s
                share = max(0.0, deadline - now - left * overhead) / left
                planned = (plan.rounds - index) * len(arms) - position
                target = min(segment_s, max(0.0, deadline - now - planned * overhead) / planned)
                segment = arm.measure(
                    target, plan.segment_min_steps(1), min(now + overhead + share, deadline)
                )
                arm.segments.append(segment)
                measured = segment.seconds if segment is not None else 0.0
                overheads.append(max(0.0, time.perf_counter() - now - measured))
                outcome.measured_seconds += measured
        finally:
            # Once per round: the weights' values do not change a step's cost, and restoring a
            # large model after every segment would cost more than the measurement.
            if any(arm.trains for arm in arms):
                restore()
        # Arms measured in this round are aligned by position in their own lists.
        outcome.rounds += 1
        round_times.append(time.perf_counter() - started)
    return outcome
