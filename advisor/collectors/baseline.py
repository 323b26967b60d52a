"""The baseline collector: runs the cached-input baseline (``advisor.experiments.baseline``) in a fit.

It decides when (``"auto"`` after the last epoch, sized by time within a share of the fit;
``"end"``; ``"start"`` before the first step) and records the result, or why it was skipped or
failed; the measurement itself, and its safety rules, are the experiment's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.options import normalize_baseline
from advisor.errors import UsageError
from advisor.experiments.baseline import (
    MULTI_WORKER,
    ONE_SHOT,
    InputBaseline,
    InputError,
    NoRealInput,
    Plan,
    Sizing,
    auto_sizing,
    explicit_sizing,
    make_plan,
    mean_step_seconds,
    measure_fit_input,
)
from advisor.experiments.settings import (
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    BASELINE_SECONDS,
)

log = logging.getLogger("advisor")


class BaselineCollector(Collector):
    """Runs the baseline after the last epoch (``"auto"``, the default, and ``"end"``) or before the
    first step (``"start"``) and records it; ``"auto"`` sizes it by time within a share of the fit
    and records why when it skips it (``experiments.baseline.auto``)."""

    name = "baseline"

    def __init__(
        self,
        mode: Any = "end",
        steps: int = BASELINE_MIN_STEPS,
        source_cache: bool = True,
        seconds: float | None = None,
        rounds: int = BASELINE_ROUNDS,
        max_seconds: float = BASELINE_MAX_SECONDS,
    ) -> None:
        super().__init__()
        self.mode = normalize_baseline(mode)
        for name, value, kind in (
            ("baseline_steps", steps, int),
            ("baseline_rounds", rounds, int),
            ("baseline_seconds", BASELINE_SECONDS if seconds is None else seconds, float),
            ("baseline_max_seconds", max_seconds, float),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not value > 0
                or (kind is int and not isinstance(value, int))
            ):
                what = "a positive integer" if kind is int else "a positive number of seconds"
                raise UsageError(f"{name} must be {what}, got {value!r}")
        self.steps, self.rounds = steps, rounds
        self.seconds = None if seconds is None else float(seconds)
        self.max_seconds = float(max_seconds)
        self.source_cache = source_cache
        self.result: InputBaseline | None = None

    def on_train_begin(self) -> None:
        if self.mode == "start":
            self._run()

    def on_train_end(self) -> None:
        if self.mode in ("end", "auto"):
            self._run()

    def _sizing(self) -> Sizing:
        if self.mode != "auto":
            return explicit_sizing(self.seconds, self.max_seconds)
        session = self.session
        fit_seconds = time.perf_counter() - session.train_begin_t
        step = mean_step_seconds(list(session.notes.windows))
        return auto_sizing(fit_seconds, step, seconds=self.seconds, max_seconds=self.max_seconds)

    def _run(self) -> None:
        session = self.session
        mode = self.mode or "end"
        if session.num_workers > 1:
            self._skip(MULTI_WORKER, mode)
            return
        sizing = self._sizing()
        if sizing.skipped:  # routine on short fits: recorded in the run, not announced
            self._skip(sizing.skipped, mode, announce=False)
            return
        t0 = time.perf_counter()
        plan = make_plan(
            session.model,
            seconds=sizing.seconds,
            min_steps=self.steps,
            rounds=self.rounds,
            max_seconds=sizing.max_seconds,
            error=UsageError,
        )
        try:
            self.result = measure_fit_input(
                session.model,
                session.data,
                session.backend,
                plan,
                training_done=mode != "start",
                need_real=mode == "auto",
                source_cache=self.source_cache,
                hooks=list(session.notes.slow_batch_hooks),
            )
        except NoRealInput:
            self._skip(ONE_SHOT, mode)
            return
        except InputError as exc:
            self._record(mode, plan, time.perf_counter() - t0, error=str(exc))
            session.event("baseline", f"baseline not measured: {exc}", level="warning")
            log.warning("advisor: baseline not measured: %s", exc)
            return
        session.writer.write(self.result.to_record(mode))
        session.notes.baseline = self.result
        session.notes.baseline_seconds = self.result.seconds
        for note in self.result.notes:
            session.event("baseline", note, level="info")
        if session.rank == 0:
            log.info(
                "advisor: baseline (%d rounds, %.1f s): %s",
                self.result.rounds,
                self.result.seconds,
                self.result.summary(),
            )

    def _skip(self, reason: str, mode: str, announce: bool = True) -> None:
        self._record(mode, None, 0.0, skipped=reason)
        if announce:
            self.session.event("baseline", f"baseline skipped: {reason}", level="info")

    def _record(self, mode: str, plan: Plan | None, seconds: float, **why: Any) -> None:
        from advisor.store.schema import BaselineRecord

        session = self.session
        session.writer.write(
            BaselineRecord(
                t=time.time(),
                steps=0,
                input_kind=session.data.kind,
                mode=mode,
                seconds=seconds,
                warmup_steps=plan.warmup_steps if plan else None,
                target_seconds=plan.seconds if plan else None,
                budget_seconds=plan.max_seconds if plan else None,
                **why,
            )
        )
