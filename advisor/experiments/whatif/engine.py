"""Measured what-if: try each recommended change on the user's own model and data, for a few
seconds, beside the unchanged configuration, and report the gain that was measured.

The engine reuses the baseline's measuring loop (``experiments.rounds``): every trial — the
unchanged configuration and each candidate change — is an *arm*; arms are measured for a time
(not a step count) in interleaved rounds whose order alternates, each segment after its own
warm-up. Each round gives a paired ratio candidate ÷ unchanged; the speedup is their median and
its noise band the order-statistic interval of ``advisor.noise``.

Safety: the model's weights, optimizer, metrics and fit attributes are snapshotted before and
restored after every round and at the end (``ModelState``, bit for bit); compiled-step variants
are swapped in and out (``whatif.model.StepSwap``); nothing of the user's input is consumed
(tf.data pipelines are rebuilt copies, Python inputs are copied). Everything stays within
``budget`` seconds: nothing is started whose estimate does not fit, every segment stops at the
deadline. Ctrl-C ends the what-if and keeps what was measured.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Sequence
from typing import Any

from advisor.errors import one_line
from advisor.experiments.cleanup import own_garbage, tear_down
from advisor.experiments.feeds.base import InputError
from advisor.experiments.rounds import Arm, Plan, round_up, run_rounds
from advisor.experiments.segments import Segment, fit_segment
from advisor.experiments.settings import WHATIF_NAMES, WHATIF_ROUNDS
from advisor.experiments.whatif.interrupt import Interrupted, StopFlag, ctrl_c_stops
from advisor.experiments.whatif.result import (
    FAILED,
    MEASURED,
    NOT_APPLICABLE,
    NOT_RELEVANT,
    SKIPPED,
    CandidateResult,
    WhatIfResult,
)
from advisor.experiments.whatif.trials import Candidate, NotApplicable, Situation, Trial

log = logging.getLogger("advisor")

PREPARE_SHARE = 0.5  # cache fills and compiles may use up to this share of the budget
MEASURE_SHARE = 0.6  # of the time left for the rounds, the share inside measured segments
CALIBRATION_STEPS = 3
MIN_COMPILE_ESTIMATE = 1.0  # seconds a new compiled step is assumed to take when nothing tells
MIN_BUDGET = 1.0  # below this nothing can be measured: a nested fit alone takes a good part of it
# A nested fit's own start (callbacks, a fresh iterator), allowed for when a calibration is planned:
# a generous allowance. A cached input's start measured 6 ms median, 20 ms p90 with a core busy on
# the 2-core VM; a pipeline's iterator fill adds its own (benchmarks/fit_start.py, RESULTS.md).
FIT_START_SECONDS = 0.3


class WhatIfError(InputError):
    """A trial failed while training (one line: the reason recorded for its candidate)."""


def candidates() -> tuple[Candidate, ...]:
    """Every candidate, input changes first (the order "auto" prepares them in)."""
    from advisor.experiments.whatif.inputs import CANDIDATES as INPUTS
    from advisor.experiments.whatif.model import CANDIDATES as MODEL

    found = INPUTS + MODEL
    if tuple(c.name for c in found) != WHATIF_NAMES:
        raise RuntimeError("the what-if candidates differ from store.schema.WHATIF_CANDIDATES")
    return found


def _warm(trial: Trial) -> int:
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
    segment or after the budget (a busy 5 s what-if ended at 6.8 s; benchmarks/RESULTS.md, "Why
    they disagree: the epoch boundary"). ``run_whatif`` froze everything older than the what-if,
    so collecting is cheap. The time from the last measured step to here goes to ``teardowns``."""
    stop.check()
    if trial.enter is not None:
        trial.enter()
    segment = None
    try:
        segment = fit_segment(
            trial.model,
            trial.kwargs,
            finite=trial.finite,
            warm=_warm(trial),
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


class _Run:
    """One what-if: the trials, their results, the clock."""

    def __init__(
        self,
        situation: Situation,
        requested: str | Sequence[str],
        budget: float,
        rounds: int,
        mode: str,
        fit_seconds: float | None,
        started: float | None,
        measure_seconds: float | None = None,
    ) -> None:
        self.situation = situation
        self.t0 = started if started is not None else time.perf_counter()
        self.end = self.t0 + budget
        self.rounds = rounds
        self.requested = requested
        self.result = WhatIfResult(
            mode,
            situation.kind,
            situation.unchanged.batch_size,
            requested if isinstance(requested, str) else list(requested),
            budget,
            fit_seconds,
        )
        self.trials: list[Trial] = []
        self.fit_start = FIT_START_SECONDS  # a nested fit's start-up (measured by the calibration)
        self.end_seconds = 0.05  # the end: a restore and a collection (run_whatif adds its timings)
        self.reserve = self.end_seconds
        self.step_reserve = 0.0  # one step past a deadline (set by the calibration)
        self.teardowns: dict[
            str, list[float]
        ] = {}  # per trial and segment: last measured step to return
        self.stop = StopFlag()
        self.measure_seconds = measure_seconds  # the rounds' measured time, when asked for

    def left(self) -> float:
        return self.end - self.reserve - time.perf_counter()

    def segment(
        self, trial: Trial, seconds: float, min_steps: int, deadline: float
    ) -> Segment | None:
        """A segment that stops early enough for the longest teardown of any segment so far to end in
        the budget: destroying a tf.data iterator stalls at random (0.63 s once beside a busy core, its
        own ≤ 0.03 s before; bounded by its own, a 12 s what-if once ended 0.18 s late)."""
        own = self.teardowns.setdefault(trial.name, [])
        expected = max((max(t) for t in self.teardowns.values() if t), default=0.0)
        unchanged = (
            self.situation.unchanged
        )  # the step reserve, in *this* trial's steps (batch ×4: four)
        size = max(1.0, trial.spe * trial.batch_size / max(1, unchanged.spe * unchanged.batch_size))
        stop_by = min(deadline, self.end - self.end_seconds - self.step_reserve * size - expected)
        if (
            stop_by - time.perf_counter() <= self.fit_start
        ):  # its start and teardown do not fit: not started
            self.stop.check()
            return None
        segment = _segment(
            trial, seconds, min_steps, stop_by, self.stop, own, self.situation.backend
        )
        if own:
            log.debug("advisor: what-if: %s: teardown %.2f s", trial.name, own[-1])
        return segment

    # -- phases ---------------------------------------------------------------------------------
    def calibrate(self) -> bool:
        """Time a few unchanged steps (the step time sizes caches, compiles and segments)."""
        unchanged = self.situation.unchanged
        steps = round_up(CALIBRATION_STEPS, unchanged.spe)
        if (
            self.situation.step_seconds is not None
        ):  # training's own step time: will the calibration fit?
            needed = FIT_START_SECONDS + (_warm(unchanged) + steps) * self.situation.step_seconds
            if needed > self.left():
                self.result.skipped = (
                    f"a step takes {self.situation.step_seconds:.2f} s: the {self.left():.1f} s left of "
                    "the budget cannot measure one (raise whatif_max_seconds)"
                )
                return False
        started = time.perf_counter()
        segment = self.segment(unchanged, 0.0, steps, self.end - self.reserve)
        if (
            self.situation.compile_seconds is None
        ):  # outside fit: no time to the first step is known
            self.situation.compile_seconds = max(
                MIN_COMPILE_ESTIMATE, time.perf_counter() - started
            )
        if segment is None or segment.steps <= 0 or segment.seconds <= 0:
            self.result.stopped = (
                "the unchanged configuration gave no measured step within the budget"
            )
            return False
        # the steps alone: the epoch restart charged to a segment is part of the fit's start here
        stepping = segment.seconds - segment.restart
        self.situation.step_seconds = stepping / segment.steps
        # what a nested fit costs before its steps, paid by every preparation: measured, as it
        # depends on load (left out, a 3 s what-if on a 3x oversubscribed VM overran by 0.5–1 s)
        elapsed = time.perf_counter() - started
        warm_and_timed = stepping * (_warm(unchanged) + segment.steps) / segment.steps
        self.fit_start = max(FIT_START_SECONDS, elapsed - warm_and_timed)
        # The end and one step past a deadline (each segment also stops before its teardown).
        self.step_reserve = 2.0 * self.situation.step_seconds * unchanged.spe
        self.reserve = self.end_seconds + self.step_reserve
        return True

    def choose(self) -> None:
        """Relevance ("auto") and construction of every candidate's trial."""
        auto = isinstance(self.requested, str)
        wanted = set(WHATIF_NAMES) if auto else set(self.requested)
        self.situation.fill_seconds = max(0.5, PREPARE_SHARE * self.left() / 2)
        for candidate in candidates():
            if candidate.name not in wanted:
                continue
            add = self.result.add
            reason = candidate.relevant(self.situation) if auto else None
            if reason is not None:
                add(CandidateResult(candidate.name, NOT_RELEVANT, reason))
                continue
            try:
                trial = candidate.build(self.situation)
            except NotApplicable as exc:
                add(CandidateResult(candidate.name, NOT_APPLICABLE, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 — a change that cannot be built is a failed candidate
                add(
                    CandidateResult(candidate.name, FAILED, f"could not set it up: {one_line(exc)}")
                )
                continue
            add(
                CandidateResult(
                    candidate.name,
                    SKIPPED,
                    None,
                    trial.label,
                    trial.batch_size,
                    trial.changes_optimisation,
                )
            )
            self.trials.append(trial)

    def prepare(self, restore: Any) -> list[Trial]:
        """Fill caches and compile each trial's step once (a short first segment), while the
        estimates fit in the preparation share of the budget (half of what is left; with a
        measuring target, whatever the rounds do not need); caches first on an input-bound run."""
        ready = []
        step = self.situation.step_seconds or 0.0
        share = PREPARE_SHARE * max(0.0, self.left())
        if self.measure_seconds is not None:  # the rounds need only their target (and overheads)
            share = max(share, self.left() - self.measure_seconds / MEASURE_SHARE)
        prepare_end = time.perf_counter() + share
        bound = (
            self.situation.input_bound
        )  # a cache can take the whole input cost away: it goes first
        for trial in sorted(self.trials, key=lambda t: bound and t.fill is None):
            entry = self.result.candidates[trial.name]
            started = time.perf_counter()
            factor = trial.batch_size / max(1, self.situation.unchanged.batch_size)
            estimate = (
                self.fit_start
                + trial.fill_estimate
                + trial.setup_estimate
                + (_warm(trial) + trial.spe) * step * factor
            )
            if started + estimate > prepare_end:
                entry.reason = (
                    f"preparing it (~{estimate:.1f} s: {_what_prepares(trial)}) does not fit in the "
                    f"{max(0.0, prepare_end - started):.1f} s left of the budget"
                )
                continue
            try:
                if trial.fill is not None:
                    trial.fill(prepare_end, self.stop)
                    self.stop.check()
                segment = self.segment(trial, 0.0, trial.spe, prepare_end)
            except NotApplicable as exc:
                entry.reason = str(exc)
                continue
            except WhatIfError as exc:
                entry.status, entry.reason = FAILED, str(exc)
                continue
            except Exception as exc:  # noqa: BLE001 — whatever the change breaks is its result
                entry.status, entry.reason = FAILED, one_line(exc)
                continue
            finally:
                restore()
                entry.seconds += time.perf_counter() - started
            if segment is None:
                entry.reason = (
                    "its first steps (compiling, warming up) did not finish within the budget"
                )
                continue
            ready.append(trial)
        return ready

    def measure(self, ready: list[Trial], restore: Any) -> None:
        """Interleaved rounds of the unchanged configuration and every prepared trial."""
        arms = [self._arm(self.situation.unchanged)] + [self._arm(t) for t in ready]
        deadline = self.end - self.reserve
        measured = max(0.0, deadline - time.perf_counter()) * MEASURE_SHARE
        if self.measure_seconds is not None:
            measured = min(measured, self.measure_seconds)
        plan = Plan(
            measured,
            2 * self.rounds,
            self.rounds,
            self.end - self.t0,
            _warm(self.situation.unchanged),
        )
        try:
            outcome = run_rounds(arms, plan, deadline, restore)
            self.result.rounds, self.result.stopped = outcome.rounds, outcome.stopped
        finally:
            self._collect(arms, ready)

    # -- internals ------------------------------------------------------------------------------

    def _arm(self, trial: Trial) -> Arm:
        failed: list[str] = []

        def measure(seconds: float, min_steps: int, deadline: float) -> Segment | None:
            if failed:
                return None
            started = time.perf_counter()
            try:
                return self.segment(trial, seconds, min_steps, deadline)
            except WhatIfError as exc:
                failed.append(str(exc))
                return None
            finally:
                if trial.name in self.result.candidates:
                    self.result.candidates[trial.name].seconds += time.perf_counter() - started

        arm = Arm(trial.name, measure, trains=True)
        arm.failed = failed  # type: ignore[attr-defined]
        return arm

    def _collect(self, arms: list[Arm], ready: list[Trial]) -> None:
        unchanged, *others = arms
        batch = {t.name: t.batch_size for t in ready}
        self.result.unchanged_rounds = [
            s.rate(self.situation.unchanged.batch_size) if s else None for s in unchanged.segments
        ]
        for arm in others:
            entry = self.result.candidates[arm.name]
            entry.rounds = [s.rate(batch[arm.name]) if s else None for s in arm.segments]
            entry.steps = sum(s.steps for s in arm.segments if s)
            if arm.failed:  # type: ignore[attr-defined]
                entry.status, entry.reason = FAILED, arm.failed[0]  # type: ignore[attr-defined]
            elif any(r is not None for r in entry.rounds):
                entry.status, entry.reason = MEASURED, None
            else:
                entry.reason = "no segment measured a step (the budget ran out first)"
        if unchanged.failed:  # type: ignore[attr-defined]
            self.result.error = f"the unchanged configuration failed: {unchanged.failed[0]}"  # type: ignore[attr-defined]


def _put_back(restore: Any, attempts: int = 3) -> bool:
    """Run ``restore`` to its end even when Ctrl-C lands in it (it starts over); True if it did."""
    interrupted = False
    for _ in range(attempts):
        try:
            restore()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
    restore()  # a fourth Ctrl-C in a row: the last attempt may raise it
    return interrupted


def _what_prepares(trial: Trial) -> str:
    parts = []
    if trial.fill is not None:
        parts.append("filling the cache")
    if trial.setup_estimate:
        parts.append("compiling its step")
    return " and ".join(parts) or "its warm-up steps"


def run_whatif(
    situation: Situation,
    requested: str | Sequence[str] = "auto",
    *,
    budget: float,
    rounds: int = WHATIF_ROUNDS,
    mode: str = "api",
    fit_seconds: float | None = None,
    started: float | None = None,
    seconds: float | None = None,
) -> WhatIfResult:
    """Measure the candidates ``requested`` ("auto": those the situation points to) against the
    unchanged configuration within ``budget`` seconds from ``started`` (a ``perf_counter`` time,
    default now: the caller's own preparation counts); the model is left exactly as it was.
    ``seconds``: the rounds' measured time in all (default: a share of what the budget leaves
    after preparing), so that a generous budget need not be spent when a shorter measurement
    is enough; the budget still caps everything."""
    from advisor.experiments.model_state import ModelState
    from advisor.experiments.whatif.model import restore_step_settings, step_settings

    run = _Run(situation, requested, budget, rounds, mode, fit_seconds, started, seconds)
    result = run.result
    if budget < MIN_BUDGET:
        result.skipped = f"a budget of {budget:.2f} s is too short to measure anything (at least {MIN_BUDGET:g} s)"
        result.seconds = time.perf_counter() - run.t0
        return result
    timer = time.perf_counter()
    gc.collect()  # training's garbage now; its duration sizes the collection at the end
    collect_s = time.perf_counter() - timer
    timer = time.perf_counter()
    state = ModelState(situation.model)
    settings = step_settings(situation.model)
    # Everything older than the what-if is left out of its collections (each segment collects
    # its own garbage: on the development VM a full collection of a process with TensorFlow
    # loaded took 0.25 s, and in a long-lived process far more; of what the what-if adds ~1 ms;
    # benchmarks/RESULTS.md, "After each segment collects its own garbage"); unfrozen at the end.
    # So the end reserves a restore (about what the snapshot took) and a small collection, not
    # another full one like the one above (``collect_s``). Segments end mid-epoch: their
    # iterators are left in reference cycles. Collected at interpreter exit, an iterator with a
    # py_function in flight hangs the process; collected at the end (even through a Ctrl-C),
    # it closes cleanly.
    run.end_seconds = run.reserve = 0.05 + min(collect_s, 0.05) + (time.perf_counter() - timer)
    with own_garbage(lambda: _put_back(gc.collect)):
        try:
            try:
                with ctrl_c_stops(run.stop):
                    log.debug("advisor: what-if: calibrating (Ctrl-C now ends it)")
                    if run.calibrate():
                        state.restore()
                        run.choose()
                        ready = run.prepare(state.restore)
                        if not ready and run.trials:
                            result.stopped = "no candidate could be prepared within the budget"
                        if ready:
                            run.measure(ready, state.restore)
                if run.stop.requested:  # the Ctrl-C came after the last segment's check
                    raise Interrupted
            except (KeyboardInterrupt, Interrupted):
                result.interrupted = True
                result.stopped = "interrupted (Ctrl-C): what was measured until then is kept"
            except WhatIfError as exc:
                result.error = f"the unchanged configuration failed: {exc}"
        finally:

            def put_back() -> None:
                state.restore()
                restore_step_settings(situation.model, settings)

            if _put_back(put_back):
                result.interrupted = True
            for trial in run.trials:
                if trial.close is not None:
                    try:
                        trial.close()
                    except Exception as exc:  # noqa: BLE001 — releasing a clone must not fail the run
                        log.debug("advisor: what-if: releasing %s failed: %s", trial.name, exc)
            run.trials.clear()
    result.seconds = time.perf_counter() - run.t0
    for name in WHATIF_NAMES:  # a candidate asked for by name that was never reached
        if not isinstance(requested, str) and name in requested and name not in result.candidates:
            result.add(CandidateResult(name, SKIPPED, result.stopped or "not reached"))
    for entry in result.candidates.values():
        if entry.status == SKIPPED and entry.reason is None:
            entry.reason = result.stopped or "not reached"
    return result
