"""The what-if's phases, in the order ``engine.run_whatif`` runs them: calibrate (time a few
unchanged steps), choose (which candidates, and their trials), prepare (fill caches, compile
steps) and measure (interleaved rounds, gathered into the result)."""

from __future__ import annotations

import time
from typing import Any

from advisor.errors import one_line
from advisor.experiments.rounds import Arm, Plan, round_up, run_rounds
from advisor.experiments.segments import Segment
from advisor.experiments.settings import WHATIF_NAMES
from advisor.experiments.whatif.result import (
    FAILED,
    MEASURED,
    NOT_APPLICABLE,
    NOT_RELEVANT,
    SKIPPED,
    CandidateResult,
)
from advisor.experiments.whatif.state import (
    FIT_START_SECONDS,
    RunState,
    WhatIfError,
    warm_steps,
)
from advisor.experiments.whatif.trials import Candidate, NotApplicable, Trial
from advisor.noise import MIN_ROUNDS

PREPARE_SHARE = 0.5  # cache fills and compiles may use up to this share of the allowance
MEASURE_SHARE = 0.6  # of the time left for the rounds, the share inside measured segments
CALIBRATION_STEPS = 3
MIN_COMPILE_ESTIMATE = 1.0  # seconds a new compiled step is assumed to take when nothing tells


def candidates() -> tuple[Candidate, ...]:
    """Every candidate, input changes first (the order "auto" prepares them in)."""
    from advisor.experiments.whatif.inputs import CANDIDATES as INPUTS
    from advisor.experiments.whatif.model import CANDIDATES as MODEL

    found = INPUTS + MODEL
    if tuple(c.name for c in found) != WHATIF_NAMES:
        raise RuntimeError("the what-if candidates differ from store.schema.WHATIF_CANDIDATES")
    return found


class WhatIfRun(RunState):
    """One what-if and its phases."""

    def too_slow(self) -> str | None:
        """Why training's own step time leaves no room for calibrating and the least measurement
        (None: it does, or the step time is not known). Asked before anything is spent."""
        unchanged = self.situation.unchanged
        if self.situation.step_seconds is None:
            return None
        steps = round_up(CALIBRATION_STEPS, unchanged.spe)
        warm = warm_steps(unchanged)
        step = self.situation.step_seconds
        least = FIT_START_SECONDS + (warm + unchanged.spe) * step  # one segment, at least
        needed = FIT_START_SECONDS + (warm + steps) * step + MIN_ROUNDS * 2 * least
        if needed <= self.left():
            return None
        return (
            f"a step takes {step:.2f} s: calibrating and {MIN_ROUNDS} rounds of one change "
            f"beside the unchanged input need about {needed:.0f} s, more than the "
            f"{max(0.0, self.left()):.1f} s left of the allowance (raise whatif_max_seconds)"
        )

    def calibrate(self) -> bool:
        """Time a few unchanged steps (the step time sizes caches, compiles and segments)."""
        unchanged = self.situation.unchanged
        steps = round_up(CALIBRATION_STEPS, unchanged.spe)
        # training's own step time: will the calibration and the least measurement fit?
        why = self.too_slow()
        if why is not None:
            self.result.skipped = why
            return False
        started = time.perf_counter()
        segment = self.segment(unchanged, 0.0, steps, self.end - self.reserve)
        # outside fit: no time to the first step is known
        if self.situation.compile_seconds is None:
            self.situation.compile_seconds = max(
                MIN_COMPILE_ESTIMATE, time.perf_counter() - started
            )
        if segment is None or segment.steps <= 0 or segment.seconds <= 0:
            self.result.stopped = (
                "the unchanged configuration gave no measured step within the allowance"
            )
            return False
        # the steps alone: the epoch restart charged to a segment is part of the fit's start here
        stepping = segment.seconds - segment.restart
        self.situation.step_seconds = stepping / segment.steps
        # what a nested fit costs before its steps, paid by every preparation: measured, as it
        # depends on load (left out, a 3 s what-if on a 3x oversubscribed VM overran by 0.5–1 s)
        elapsed = time.perf_counter() - started
        warm_and_timed = stepping * (warm_steps(unchanged) + segment.steps) / segment.steps
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
            # a change that cannot be built is a failed candidate
            except Exception as exc:  # noqa: BLE001
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
        estimates fit in the preparation share of the allowance (half of what is left; with a
        measuring target, whatever the rounds do not need); caches first on an input-bound run."""
        ready = []
        step = self.situation.step_seconds or 0.0
        share = PREPARE_SHARE * max(0.0, self.left())
        if self.measure_seconds is not None:  # the rounds need only their target (and overheads)
            share = max(share, self.left() - self.measure_seconds / MEASURE_SHARE)
        prepare_end = time.perf_counter() + share
        # a cache can take the whole input cost away: it goes first
        bound = self.situation.input_bound
        for trial in sorted(self.trials, key=lambda t: bound and t.fill is None):
            entry = self.result.candidates[trial.name]
            started = time.perf_counter()
            factor = trial.batch_size / max(1, self.situation.unchanged.batch_size)
            estimate = (
                self.fit_start
                + trial.fill_estimate
                + trial.setup_estimate
                + (warm_steps(trial) + trial.spe) * step * factor
            )
            if started + estimate > prepare_end:
                entry.reason = (
                    f"preparing it (~{estimate:.1f} s: {_what_prepares(trial)}) does not fit "
                    f"in the {max(0.0, prepare_end - started):.1f} s left of the allowance"
                )
                continue
            try:
                if trial.fill is not None:  # the first steps after it must fit too
                    trial.fill(prepare_end - (estimate - trial.fill_estimate), self.stop)
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
                    "its first steps (compiling, warming up) did not finish within the allowance"
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
            warm_steps(self.situation.unchanged),
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
                entry.reason = "no segment measured a step (the allowance ran out first)"
        failed = unchanged.failed  # type: ignore[attr-defined]
        if failed:
            self.result.error = f"the unchanged configuration failed: {failed[0]}"


def _what_prepares(trial: Trial) -> str:
    parts = []
    if trial.fill is not None:
        parts.append("filling the cache")
    if trial.setup_estimate:
        parts.append("compiling its step")
    return " and ".join(parts) or "its warm-up steps"
