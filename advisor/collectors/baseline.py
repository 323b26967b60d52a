"""Cached-input baseline: how fast would this model train if its input cost nothing?

With the same compiled train step, the baseline measures side by side

- training throughput on the real input,
- training throughput on the first batch served from memory (``take(1).cache().repeat()`` for
  tf.data; the first batch repeated for arrays, generators, PyDataset and DataLoader): the ceiling,
- the input alone, iterated without training (data-only),
- for tf.data pipelines that read files, training with a cache right after the reading stage.

Each is measured **for a time, not a step count**, in **interleaved rounds** (cached, real, …,
then the reverse order), each segment after its own warm-up, within a time budget. Every round
gives a paired value — the input's cost ``1 − real ÷ cached`` of that round — and the figure is
their median with a noise band (``advisor.store.bands``): a cost inside the band is no input cost.

It trains the user's model itself through nested ``fit`` calls on our feeds, then restores
weights, optimizer and metric state bit for bit (``model_state.ModelState``); the user's callbacks
never see those steps. Use it from a callback, ``AdvisorCallback(baseline="end")``, or directly:
``advisor.measure_input(model, dataset, seconds=3)``.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from typing import Any

from advisor.collectors.base import Collector
from advisor.collectors.baseline_auto import (
    MULTI_WORKER,
    ONE_SHOT,
    Sizing,
    auto_sizing,
    explicit_sizing,
    mean_step_seconds,
)
from advisor.collectors.baseline_result import InputBaseline
from advisor.collectors.baseline_rounds import (
    Arm,
    Plan,
    Segment,
    fit_segment,
    own_garbage,
    round_up,
    run_rounds,
    tear_down,
)
from advisor.collectors.feed_base import MAX_SLICE_BYTES, Feeds, InputError, one_line
from advisor.collectors.input_feeds import epoch_batches, feeds_from_session, feeds_from_user
from advisor.collectors.options import (
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    BASELINE_SECONDS,
    normalize_baseline,
)
from advisor.collectors.random_state import GlobalRandomState
from advisor.errors import UsageError
from advisor.probes.framework import backend_of, is_tf_keras, steps_per_execution

log = logging.getLogger("advisor")

DEFAULT_SECONDS = BASELINE_SECONDS  # measured time, all arms and rounds together
DEFAULT_MIN_STEPS = BASELINE_MIN_STEPS  # measured steps per arm at least, however short the time
DEFAULT_ROUNDS = BASELINE_ROUNDS  # interleaved rounds: a 99 % band that one stalled round per side cannot move
DEFAULT_MAX_SECONDS = BASELINE_MAX_SECONDS  # the whole baseline, from its first (compiled) step, stays within this
CALIBRATION_STEPS = 5  # cached steps timed before the rounds
MODES = ("auto", "start", "end")

__all__ = ["BaselineCollector", "InputBaseline", "InputError", "Plan", "make_plan", "measure_input",
           "run_baseline"]


def make_plan(model: Any, *, seconds: float = DEFAULT_SECONDS, min_steps: int = DEFAULT_MIN_STEPS,
              rounds: int = DEFAULT_ROUNDS, max_seconds: float = DEFAULT_MAX_SECONDS,
              warmup_steps: int | None = None, error: type[Exception] = InputError) -> Plan:
    """A checked measuring plan for ``model`` (warm-up rounded to ``steps_per_execution``)."""
    if not isinstance(seconds, (int, float)) or not seconds > 0:
        raise error(f"seconds must be a positive number, got {seconds!r}")
    if isinstance(min_steps, bool) or not isinstance(min_steps, int) or min_steps < 1:
        raise error(f"steps must be a positive integer, got {min_steps!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise error(f"rounds must be a positive integer, got {rounds!r}")
    if not isinstance(max_seconds, (int, float)) or not max_seconds > 0:
        raise error(f"max_seconds must be a positive number, got {max_seconds!r}")
    spe = steps_per_execution(model)
    warm = round_up(warmup_steps if warmup_steps is not None else spe, spe)
    return Plan(float(seconds), int(min_steps), int(rounds), float(max_seconds), warm)


# ---------------------------------------------------------------------------------------------
# the plain API


def measure_input(model: Any, data: Any, steps: int | None = DEFAULT_MIN_STEPS, *, seconds: float = DEFAULT_SECONDS,
                  rounds: int = DEFAULT_ROUNDS, max_seconds: float = DEFAULT_MAX_SECONDS,
                  batch_size: int | None = None, warmup_steps: int | None = None, source_cache: bool = True,
                  data_only: bool = True, timeout_s: float | None = None) -> InputBaseline:
    """Measure real, cached-input, data-only (and source-cached) throughput of ``model`` on ``data``.

    ``data`` is what you would pass to ``fit``: a tf.data.Dataset, a tuple ``(x, y)`` of arrays
    (with ``batch_size``, default 32), a keras.utils.PyDataset, a torch DataLoader or a generator.
    The measurement lasts about ``seconds`` (all arms, ``rounds`` interleaved rounds) and at least
    ``steps`` measured steps per arm (``steps=None``: at least one epoch's worth), and stops within
    ``max_seconds``. The model must be compiled; its weights and optimizer state are the same
    afterwards. Raises ``InputError`` (one line) for bad input. ``timeout_s`` is the old name of
    ``max_seconds``.
    """
    if timeout_s is not None:
        warnings.warn("measure_input(timeout_s=) is now max_seconds= (a budget for the whole baseline)",
                      DeprecationWarning, stacklevel=2)
        max_seconds = timeout_s
    _check_model(model)
    backend = backend_of(model)
    spe = steps_per_execution(model)
    warm = round_up(warmup_steps if warmup_steps is not None else spe, spe)
    if steps is None:
        epoch = epoch_batches(data, batch_size)
        if epoch - warm < 1:
            raise InputError(f"one epoch has {epoch} batches, too few to measure after {warm} warm-up steps; "
                             "pass steps=N")
        steps = epoch - warm
    plan = make_plan(model, seconds=seconds, min_steps=steps, rounds=rounds, max_seconds=max_seconds,
                     warmup_steps=warm)
    randomness = GlobalRandomState()
    try:
        with own_garbage():
            return run_baseline(model, feeds_from_user(data, batch_size, backend, legacy=is_tf_keras(model)), plan,
                                source_cache=source_cache, data_only=data_only)
    finally:
        randomness.restore()


def _check_model(model: Any) -> None:
    if not hasattr(model, "fit") or not hasattr(model, "variables"):
        raise InputError(f"expected a Keras model, got {type(model).__name__}")
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", True):
        raise InputError("the model is not compiled: call model.compile(optimizer, loss) first")


# ---------------------------------------------------------------------------------------------
# the engine


def run_baseline(model: Any, feeds: Feeds, plan: Plan, *, source_cache: bool = True,
                 data_only: bool = True) -> InputBaseline:
    """Measure every feed on ``model`` in interleaved rounds; its state is restored exactly."""
    from advisor.collectors.model_state import ModelState, ensure_built

    t0 = time.perf_counter()
    spe = steps_per_execution(model)
    warm = plan.warmup_steps
    result = InputBaseline(feeds.kind, feeds.batch_size, 0, warm, notes=list(feeds.notes),
                           target_seconds=plan.seconds, budget_seconds=plan.max_seconds)
    if feeds.first is not None:
        ensure_built(model, feeds.first)
    state = ModelState(model)

    backend = backend_of(model)

    def training_arm(name: str, kwargs: dict[str, Any], finite: bool, what: str) -> Arm:
        def measure(seconds: float, min_steps: int, deadline: float) -> Segment | None:
            try:
                return fit_segment(model, kwargs, finite=finite, warm=warm, seconds=seconds,
                                   min_steps=round_up(min_steps, spe), deadline=deadline, what=what,
                                   error=InputError, epoch_steps=feeds.real_batches)
            finally:
                tear_down(backend)  # the real input's threads must not work on in the next arm's time

        return Arm(name, measure, trains=True)

    try:
        # Calibration: a few cached steps that compile the step if needed and time it, so that
        # sliced feeds can be sized. The budget starts once the first step (compilation) is done.
        first_tick: list[float] = []
        calibrating = time.perf_counter()
        calibration = fit_segment(model, feeds.cached, finite=False, warm=warm, seconds=0.0,
                                  min_steps=min(plan.segment_min_steps(spe), round_up(CALIBRATION_STEPS, spe)),
                                  deadline=t0 + plan.max_seconds, what="the cached input", error=InputError,
                                  first_tick=first_tick)
        state.restore()
        deadline = (first_tick[0] if first_tick else time.perf_counter()) + plan.max_seconds
        # What a segment costs beyond its measured time (compilation aside); the rounds replace
        # this first estimate with what they see.
        since = first_tick[0] if first_tick else calibrating
        overhead = min(max(0.0, time.perf_counter() - since - (calibration.seconds if calibration else 0.0)),
                       plan.max_seconds / (4 * max(1, plan.rounds)))
        need = _batches_needed(feeds, plan, calibration, warm)
        if feeds.resize is not None:
            feeds.resize(need)
        arms = [training_arm("cached", feeds.cached, False, "the cached input")]
        if feeds.real is not None:
            arms.append(training_arm("real", feeds.real, feeds.real_batches is not None, "the real input"))
        if source_cache and feeds.source_cached is not None:
            try:
                source_kwargs = feeds.source_cached(need)
            except Exception as exc:  # noqa: BLE001 — graph surgery is best effort: report it
                source_kwargs = None
                result.notes.append(f"no source-cache run: {one_line(exc)}")
            if source_kwargs is not None:
                arms.append(training_arm("source_cached", source_kwargs, False, "the source-cached input"))
        if data_only and feeds.data_only is not None:
            arms.append(Arm("data_only", _data_only_measure(feeds, warm, backend), trains=False))
        outcome = run_rounds(arms, plan, deadline, state.restore, overhead)
    finally:
        state.restore()
    for arm in arms:
        result.set_rounds(arm.name, [s.rate(feeds.batch_size) if s else None for s in arm.segments],
                          sum(s.steps for s in arm.segments if s))
    result.rounds = outcome.rounds
    result.measured_seconds = outcome.measured_seconds
    result.stopped = outcome.stopped
    if outcome.stopped:
        result.notes.append(f"baseline stopped early: {outcome.stopped}")
    if result.stalled_rounds:
        result.notes.append(f"{result.stalled_rounds} of {result.rounds} rounds set aside: the cached or real "
                            "input's segment ran under a third of its usual speed (the machine stalled)")
    if feeds.real is not None and result.real_samples_per_s is None:
        result.notes.append("the real input gave no measured step (it ran out or failed to start in time)")
    result.seconds = time.perf_counter() - t0
    return result


def _batches_needed(feeds: Feeds, plan: Plan, calibration: Segment | None, warm: int) -> int:
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


def _data_only_measure(feeds: Feeds, warm: int, backend: str | None) -> Any:
    assert feeds.data_only is not None
    pull = feeds.data_only

    def measure(seconds: float, min_steps: int, deadline: float) -> Segment | None:
        try:
            return pull(warm, seconds, min_steps, deadline)
        except Exception as exc:  # noqa: BLE001 — any input failure becomes one clear line
            raise InputError(f"iterating the input failed: {one_line(exc)}") from None
        finally:
            tear_down(backend)

    return measure


# ---------------------------------------------------------------------------------------------
# the collector


class BaselineCollector(Collector):
    """Runs the baseline after the last epoch (``"auto"``, the default, and ``"end"``) or before the
    first step (``"start"``) and records it; ``"auto"`` sizes it by time within a share of the fit
    and records why when it skips it (``baseline_auto``)."""

    name = "baseline"

    def __init__(self, mode: Any = "end", steps: int = DEFAULT_MIN_STEPS, source_cache: bool = True,
                 seconds: float | None = None, rounds: int = DEFAULT_ROUNDS,
                 max_seconds: float = DEFAULT_MAX_SECONDS) -> None:
        super().__init__()
        self.mode = normalize_baseline(mode)
        for name, value, kind in (("baseline_steps", steps, int), ("baseline_rounds", rounds, int),
                                  ("baseline_seconds", DEFAULT_SECONDS if seconds is None else seconds, float),
                                  ("baseline_max_seconds", max_seconds, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or (
                    kind is int and not isinstance(value, int)):
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
        s = self.s
        fit_seconds = time.perf_counter() - s.train_begin_t
        step = mean_step_seconds(list(s.shared.get("throughput.windows") or []))
        return auto_sizing(fit_seconds, step, seconds=self.seconds, max_seconds=self.max_seconds)

    def _run(self) -> None:
        s = self.s
        mode = self.mode or "end"
        if s.num_workers > 1:
            self._skip(MULTI_WORKER, mode)
            return
        sizing = self._sizing()
        if sizing.skipped:  # routine on short fits: recorded in the run, not announced
            self._skip(sizing.skipped, mode, announce=False)
            return
        t0 = time.perf_counter()
        plan = make_plan(s.model, seconds=sizing.seconds, min_steps=self.steps, rounds=self.rounds,
                         max_seconds=sizing.max_seconds, error=UsageError)
        randomness = GlobalRandomState()  # what the feeds and the rounds draw is put back
        feeds = None
        with own_garbage():
            try:
                feeds = feeds_from_session(s.data, s.backend, training_done=mode != "start")
                if mode == "auto" and feeds.real is None:
                    self._skip(ONE_SHOT, mode)
                    return
                self.result = run_baseline(s.model, feeds, plan, source_cache=self.source_cache)
            except InputError as exc:
                self._record(mode, plan, time.perf_counter() - t0, error=str(exc))
                s.event("baseline", f"baseline not measured: {exc}", level="warning")
                log.warning("advisor: baseline not measured: %s", exc)
                return
            finally:
                randomness.restore()
                feeds = None
        s.writer.write(self.result.to_record(mode))
        s.shared["baseline"] = self.result
        s.shared["baseline_seconds"] = self.result.seconds
        for note in self.result.notes:
            s.event("baseline", note, level="info")
        if s.rank == 0:
            log.info("advisor: baseline (%d rounds, %.1f s): %s", self.result.rounds, self.result.seconds,
                     self.result.summary())

    def _skip(self, reason: str, mode: str, announce: bool = True) -> None:
        self._record(mode, None, 0.0, skipped=reason)
        if announce:
            self.s.event("baseline", f"baseline skipped: {reason}", level="info")

    def _record(self, mode: str, plan: Plan | None, seconds: float, **why: Any) -> None:
        from advisor.store.schema import BaselineRecord

        s = self.s
        self.s.writer.write(BaselineRecord(
            t=time.time(), steps=0, input_kind=s.data.kind, mode=mode, seconds=seconds,
            warmup_steps=plan.warmup_steps if plan else None, target_seconds=plan.seconds if plan else None,
            budget_seconds=plan.max_seconds if plan else None, **why))
