"""The baseline collector: runs the cached-input baseline (``advisor.experiments.baseline``)
in a fit.

It decides when (``"auto"`` after the last epoch, sized by time within a share of the fit;
``"end"``; ``"start"`` before the first step) and records the result, or why it was skipped or
failed; the measurement itself, and its safety rules, are the experiment's.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Literal

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, count, positive
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
)

log = logging.getLogger("advisor")
BASELINE_MODES = ("auto", "start", "end")
# What baseline= accepts; True means "on, the default way" ("auto"), as for whatif=.
Baseline = Literal["auto", "end", "start"] | bool | None


def parse_baseline(name: str, value: Any) -> str | None:
    """``"auto"``, ``"end"``, ``"start"``, or None (off): the one interpretation of baseline=."""
    if value in (None, False, "", "off", "none"):
        return None
    if value is True:  # on, the default way: as whatif=True
        return "auto"
    if value in BASELINE_MODES:
        return str(value)
    raise UsageError(f"{name} must be 'auto', 'end', 'start' or None, got {value!r}")


OPTIONS = (
    Option(
        "baseline",
        "Baseline",
        "auto",
        '``"auto"`` (default): measure the cached-input baseline after the last epoch, sized '
        "by time and capped at a small share of the fit, or skip it with the reason recorded "
        'where it cannot run; ``"end"`` or ``"start"``: measure it then, uncapped; True: '
        '``"auto"`` (as for ``whatif``); None or False: off.',
        parse_baseline,
        stored="str | None",
    ),
    Option(
        "baseline_steps",
        "int",
        BASELINE_MIN_STEPS,
        "measured steps per arm of the baseline, at least.",
        count(1),
    ),
    Option(
        "baseline_seconds",
        "float | None",
        None,
        "measured time of the whole baseline (all arms and rounds); None: about 2 s or 200 steps, "
        'whichever is longer, with ``"auto"``, 3 s with ``"end"``/``"start"``.',
        positive(optional=True),
    ),
    Option(
        "baseline_rounds",
        "int",
        BASELINE_ROUNDS,
        "interleaved rounds (real and cached input alternate; each figure gets a noise band from "
        "the rounds' spread).",
        count(1),
    ),
    Option(
        "baseline_max_seconds",
        "float",
        BASELINE_MAX_SECONDS,
        "the baseline stops within this allowance.",
        positive(),
    ),
    Option(
        "baseline_source_cache",
        "bool",
        True,
        "also measure with a cache right after the file source.",
    ),
)


class BaselineCollector(Collector):
    """Runs the baseline after the last epoch (``"auto"``, the default, and ``"end"``) or before the
    first step (``"start"``) and records it; ``"auto"`` sizes it by time within a share of the fit
    and records why when it skips it (``experiments.baseline.auto``)."""

    name = "baseline"

    def __init__(
        self,
        mode: str = "end",
        steps: int = BASELINE_MIN_STEPS,
        source_cache: bool = True,
        seconds: float | None = None,
        rounds: int = BASELINE_ROUNDS,
        max_seconds: float = BASELINE_MAX_SECONDS,
    ) -> None:
        super().__init__()
        self.mode: str | None = mode  # parse_baseline's value: the options checked them all
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
        return auto_sizing(
            fit_seconds,
            step,
            seconds=self.seconds,
            max_seconds=self.max_seconds,
            warm=session.steps_per_execution or 1,
            min_steps=self.steps,
            rounds=self.rounds,
        )

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
            from_start=mode == "auto",  # the default's allowance is the user's time, all of it
            real_step_seconds=sizing.step_seconds,
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
