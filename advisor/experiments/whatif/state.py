"""One what-if's state: its trials and result, its clock, and the timed segments that keep to
the clock's end (``RunState.segment``). The phases that use them are in ``phases.py``; the
what-if as a whole, in ``engine.py``."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from advisor.experiments.cleanup import tear_down
from advisor.experiments.feeds.base import InputError
from advisor.experiments.rounds import round_up
from advisor.experiments.segments import Segment, fit_segment
from advisor.experiments.whatif.interrupt import StopFlag
from advisor.experiments.whatif.result import WhatIfResult
from advisor.experiments.whatif.trials import Situation, Trial

log = logging.getLogger("advisor")

# A nested fit's own start (callbacks, a fresh iterator), allowed for when a calibration is planned:
# a generous allowance. A cached input's start measured 6 ms median, 20 ms p90 with a core busy on
# the 2-core VM; a pipeline's iterator fill adds its own (benchmarks/fit_start.py, RESULTS.md).
FIT_START_SECONDS = 0.3


class WhatIfError(InputError):
    """A trial failed while training (one line: the reason recorded for its candidate)."""


def warm_steps(trial: Trial) -> int:
    """The warm-up steps of one of ``trial``'s segments."""
    return round_up(2 * trial.spe, trial.spe)


def _segment(
    trial: Trial,
    seconds: float,
    min_steps: int,
    deadline: float,
    stop: StopFlag,
    teardowns: list[float] | None = None,
    backend: str | None = None,
) -> Segment | None:
    """One timed segment of ``trial`` (its compile settings swapped in around it); Interrupted
    after it when Ctrl-C asked to stop.

    The segment's input is torn down before it returns: fit ends mid-epoch and leaves its
    iterator to the garbage collector, and destroying a tf.data iterator with work in flight
    stalled up to ~1 s (0.99–1.00 s on the 2-vCPU VM). Collected here, the stall is this
    segment's overhead, which the rounds plan with; left for later, it landed in another arm's
    segment or after the allowance (a busy 5 s what-if ended at 6.8 s; benchmarks/RESULTS.md,
    "Why they disagree: the epoch boundary"). ``run_whatif`` froze everything older than the
    what-if, so collecting is cheap. The time from the last measured step to here goes to
    ``teardowns``."""
    stop.check()
    if trial.enter is not None:
        trial.enter()
    segment = None
    try:
        segment = fit_segment(
            trial.model,
            trial.kwargs,
            finite=trial.finite,
            warm=warm_steps(trial),
            seconds=seconds,
            min_steps=round_up(min_steps, trial.spe),
            deadline=deadline,
            what=trial.label,
            error=WhatIfError,
            epoch_steps=trial.epoch_steps,
            whole_epochs=True,
            stop=stop,
            epoch_length=trial.epoch_length if trial.finite else None,
        )
    finally:
        if trial.leave is not None:
            trial.leave()
        tear_down(backend)
        if teardowns is not None and segment is not None and segment.at:
            teardowns.append(time.perf_counter() - segment.at)
    stop.check()
    return segment


class RunState:
    """One what-if: the trials, their results, the clock."""

    def __init__(
        self,
        situation: Situation,
        requested: str | Sequence[str],
        allowance: float,
        rounds: int,
        mode: str,
        fit_seconds: float | None,
        started: float | None,
        measure_seconds: float | None = None,
    ) -> None:
        self.situation = situation
        self.t0 = started if started is not None else time.perf_counter()
        self.end = self.t0 + allowance
        self.rounds = rounds
        self.requested = requested
        self.result = WhatIfResult(
            mode,
            situation.kind,
            situation.unchanged.batch_size,
            requested if isinstance(requested, str) else list(requested),
            allowance,
            fit_seconds,
        )
        self.trials: list[Trial] = []
        self.fit_start = FIT_START_SECONDS  # a nested fit's start-up (measured by the calibration)
        self.end_seconds = 0.05  # the end: a restore and a collection (run_whatif adds its timings)
        self.reserve = self.end_seconds
        self.step_reserve = 0.0  # one step past a deadline (set by the calibration)
        # per trial and segment: last measured step to return
        self.teardowns: dict[str, list[float]] = {}
        self.stop = StopFlag()
        self.measure_seconds = measure_seconds  # the rounds' measured time, when asked for

    def left(self) -> float:
        return self.end - self.reserve - time.perf_counter()

    def segment(
        self, trial: Trial, seconds: float, min_steps: int, deadline: float
    ) -> Segment | None:
        """A segment that stops early enough for the longest teardown of any segment so far to
        end in the allowance: destroying a tf.data iterator stalls at random (0.63 s once beside
        a busy core, its own ≤ 0.03 s before; bounded by its own, a 12 s what-if once ended
        0.18 s late)."""
        own = self.teardowns.setdefault(trial.name, [])
        expected = max((max(t) for t in self.teardowns.values() if t), default=0.0)
        # the step reserve, in *this* trial's steps (batch ×4: four)
        unchanged = self.situation.unchanged
        size = max(1.0, trial.spe * trial.batch_size / max(1, unchanged.spe * unchanged.batch_size))
        stop_by = min(deadline, self.end - self.end_seconds - self.step_reserve * size - expected)
        # its start and teardown do not fit: not started
        if stop_by - time.perf_counter() <= self.fit_start:
            self.stop.check()
            return None
        segment = _segment(
            trial, seconds, min_steps, stop_by, self.stop, own, self.situation.backend
        )
        if own:
            log.debug("advisor: what-if: %s: teardown %.2f s", trial.name, own[-1])
        return segment
