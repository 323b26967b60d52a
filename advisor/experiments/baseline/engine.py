"""Cached-input baseline: how fast would this model train if its input cost nothing?

With the same compiled train step, the baseline measures side by side

- training throughput on the real input,
- training throughput on the first batch served from memory (``take(1).cache().repeat()`` for
  tf.data; the first batch repeated for arrays, generators, PyDataset and DataLoader): the ceiling,
- the input alone, iterated without training (data-only),
- for tf.data pipelines that read files, training with a cache right after the reading stage.

Each is measured **for a time, not a step count**, in **interleaved rounds** (cached, real, …,
then the reverse order), each segment after its own warm-up, within a time allowance. Every round
gives a paired value — the input's cost ``1 − real ÷ cached`` of that round — and the figure is
their median with a noise band (``advisor.noise``): a cost inside the band is no input cost.

It trains the user's model itself through nested ``fit`` calls on our feeds, then restores
weights, optimizer and metric state bit for bit (``model_state.ModelState``); the user's callbacks
never see those steps. Use it from a callback, ``AdvisorCallback(baseline="end")``, or directly:
``advisor.measure_input(model, dataset, seconds=3)``.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from typing import Any

from advisor.errors import one_line
from advisor.experiments.baseline.calibration import calibrate, rounds_that_fit, that_fit
from advisor.experiments.baseline.result import InputBaseline
from advisor.experiments.cleanup import own_garbage, tear_down
from advisor.experiments.feeds.base import Feeds, InputError
from advisor.experiments.feeds.choose import epoch_batches, feeds_from_session, feeds_from_user
from advisor.experiments.hooks import hooks_callback
from advisor.experiments.random_state import GlobalRandomState
from advisor.experiments.rounds import Arm, Outcome, Plan, round_up, run_rounds
from advisor.experiments.segments import Segment, fit_segment
from advisor.experiments.settings import (
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    BASELINE_SECONDS,
)
from advisor.noise import MIN_ROUNDS
from advisor.probes.framework import backend_of, is_tf_keras, steps_per_execution

log = logging.getLogger("advisor")

DEFAULT_SECONDS = BASELINE_SECONDS  # measured time, all arms and rounds together
DEFAULT_MIN_STEPS = BASELINE_MIN_STEPS  # measured steps per arm at least, however short the time
DEFAULT_ROUNDS = (
    BASELINE_ROUNDS  # interleaved rounds: a 99 % band that one stalled round per side cannot move
)
DEFAULT_MAX_SECONDS = (
    BASELINE_MAX_SECONDS  # the whole baseline, from its first (compiled) step, stays within this
)
MODES = ("auto", "start", "end")

__all__ = [
    "InputBaseline",
    "InputError",
    "NoRealInput",
    "Plan",
    "check_model",
    "make_plan",
    "measure_fit_input",
    "measure_input",
    "run_baseline",
]


def make_plan(
    model: Any,
    *,
    seconds: float = DEFAULT_SECONDS,
    min_steps: int = DEFAULT_MIN_STEPS,
    rounds: int = DEFAULT_ROUNDS,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    warmup_steps: int | None = None,
    error: type[Exception] = InputError,
    from_start: bool = False,
    real_step_seconds: float | None = None,
) -> Plan:
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
    return Plan(
        float(seconds),
        int(min_steps),
        int(rounds),
        float(max_seconds),
        warm,
        from_start,
        real_step_seconds,
    )


# ---------------------------------------------------------------------------------------------
# the plain API


def measure_input(
    model: Any,
    data: Any,
    steps: int | None = DEFAULT_MIN_STEPS,
    *,
    seconds: float = DEFAULT_SECONDS,
    rounds: int = DEFAULT_ROUNDS,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    batch_size: int | None = None,
    warmup_steps: int | None = None,
    source_cache: bool = True,
    data_only: bool = True,
    timeout_s: float | None = None,
) -> InputBaseline:
    """Measure real, cached-input, data-only (and source-cached) throughput of ``model`` on
    ``data``.

    ``data`` is what you would pass to ``fit``: a tf.data.Dataset, a tuple ``(x, y)`` of arrays
    (with ``batch_size``, default 32), a keras.utils.PyDataset, a torch DataLoader or a generator.
    The measurement lasts about ``seconds`` (all arms, ``rounds`` interleaved rounds) and at least
    ``steps`` measured steps per arm (``steps=None``: at least one epoch's worth), and stops within
    ``max_seconds``. The model must be compiled; its weights and optimizer state are the same
    afterwards. Raises ``InputError`` (one line) for bad input. ``timeout_s`` is the old name of
    ``max_seconds``.
    """
    if timeout_s is not None:
        warnings.warn(
            "measure_input(timeout_s=) is now max_seconds= (an allowance for the whole baseline)",
            DeprecationWarning,
            stacklevel=2,
        )
        max_seconds = timeout_s
    check_model(model)
    backend = backend_of(model)
    spe = steps_per_execution(model)
    warm = round_up(warmup_steps if warmup_steps is not None else spe, spe)
    if steps is None:
        epoch = epoch_batches(data, batch_size)
        if epoch - warm < 1:
            raise InputError(
                f"one epoch has {epoch} batches, too few to measure after {warm} warm-up steps; "
                "pass steps=N"
            )
        steps = epoch - warm
    plan = make_plan(
        model,
        seconds=seconds,
        min_steps=steps,
        rounds=rounds,
        max_seconds=max_seconds,
        warmup_steps=warm,
    )
    randomness = GlobalRandomState()
    try:
        with own_garbage():
            return run_baseline(
                model,
                feeds_from_user(data, batch_size, backend, legacy=is_tf_keras(model)),
                plan,
                source_cache=source_cache,
                data_only=data_only,
            )
    finally:
        randomness.restore()


def check_model(model: Any) -> None:
    if not hasattr(model, "fit") or not hasattr(model, "variables"):
        raise InputError(f"expected a Keras model, got {type(model).__name__}")
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", True):
        raise InputError("the model is not compiled: call model.compile(optimizer, loss) first")


# ---------------------------------------------------------------------------------------------
# the engine


def run_baseline(
    model: Any,
    feeds: Feeds,
    plan: Plan,
    *,
    source_cache: bool = True,
    data_only: bool = True,
    hooks: Sequence[tuple[str, Any]] = (),
) -> InputBaseline:
    """Measure every feed on ``model`` in interleaved rounds; its state is restored exactly.

    ``hooks``: ("Class.hook", bound method) of the fit's slow callback batch hooks; an arm trains
    the cached input with them called at every batch, for the ceiling without them."""
    from advisor.experiments.model_state import ModelState, ensure_built

    t0 = time.perf_counter()
    spe = steps_per_execution(model)
    warm = plan.warmup_steps
    result = InputBaseline(
        feeds.kind,
        feeds.batch_size,
        0,
        warm,
        notes=list(feeds.notes),
        target_seconds=plan.seconds,
        budget_seconds=plan.max_seconds,
    )
    if feeds.first is not None:
        ensure_built(model, feeds.first)
    state = ModelState(model)
    arms = _Arms(model, feeds, warm, spe)
    try:
        found = calibrate(model, feeds, plan, spe, t0, state.restore)
        if feeds.resize is not None:
            feeds.resize(found.need)
        chosen = arms.choose(found.need, result, source_cache, data_only, hooks)
        if plan.from_start:
            chosen = that_fit(chosen, found, plan, result)
            plan = rounds_that_fit(plan, chosen, found)
        if chosen:
            outcome = run_rounds(chosen, plan, found.deadline, state.restore, found.overhead)
        else:
            outcome = Outcome(stopped=result.stopped)
    finally:
        state.restore()
    _gather(result, chosen, outcome, feeds)
    result.seconds = time.perf_counter() - t0
    return result


class _Arms:
    """The baseline's arms on one model and its feeds: the cached input, the real input, the
    source-cached input, the input alone (data-only) and the cached input with the slow hooks."""

    def __init__(self, model: Any, feeds: Feeds, warm: int, spe: int) -> None:
        self.model, self.feeds, self.warm, self.spe = model, feeds, warm, spe
        self.backend = backend_of(model)

    def training(
        self,
        name: str,
        kwargs: dict[str, Any],
        finite: bool,
        what: str,
        extra: tuple[Any, ...] = (),
    ) -> Arm:
        """An arm that trains ``model`` on ``kwargs`` (a nested fit per segment)."""
        model, feeds, warm, spe, backend = self.model, self.feeds, self.warm, self.spe, self.backend

        def measure(seconds: float, min_steps: int, deadline: float) -> Segment | None:
            try:
                return fit_segment(
                    model,
                    kwargs,
                    finite=finite,
                    warm=warm,
                    seconds=seconds,
                    min_steps=round_up(min_steps, spe),
                    deadline=deadline,
                    what=what,
                    error=InputError,
                    epoch_steps=feeds.real_batches,
                    extra=extra,
                )
            finally:
                # the real input's threads must not work on in the next arm's time
                tear_down(backend)

        return Arm(name, measure, trains=True)

    def choose(
        self,
        need: int,
        result: InputBaseline,
        source_cache: bool,
        data_only: bool,
        hooks: Sequence[tuple[str, Any]],
    ) -> list[Arm]:
        """The arms this feed has and the caller asked for, the cached input first."""
        feeds = self.feeds
        arms = [self.training("cached", feeds.cached, False, "the cached input")]
        if feeds.real is not None:
            arms.append(
                self.training("real", feeds.real, feeds.real_batches is not None, "the real input")
            )
        if source_cache and feeds.source_cached is not None:
            try:
                source_kwargs = feeds.source_cached(need)
            except Exception as exc:  # noqa: BLE001 — graph surgery is best effort: report it
                source_kwargs = None
                result.notes.append(f"no source-cache run: {one_line(exc)}")
            if source_kwargs is not None:
                arms.append(
                    self.training("source_cached", source_kwargs, False, "the source-cached input")
                )
        if data_only and feeds.data_only is not None:
            measure = _data_only_measure(feeds, self.warm, self.backend)
            arms.append(Arm("data_only", measure, trains=False))
        if hooks:
            result.hooks_of = [name for name, _ in hooks]
            arms.append(
                self.training(
                    "hooks",
                    feeds.cached,
                    False,
                    "the cached input with the slow callback hooks",
                    (hooks_callback(self.model, hooks),),
                )
            )
        return arms


def _gather(result: InputBaseline, arms: list[Arm], outcome: Outcome, feeds: Feeds) -> None:
    """Each arm's rates per round into ``result``, with the rounds' outcome and notes on what
    stopped them, what was set aside and what gave no step."""
    for arm in arms:
        result.set_rounds(
            arm.name,
            [s.rate(feeds.batch_size) if s else None for s in arm.segments],
            sum(s.steps for s in arm.segments if s),
        )
    result.rounds = outcome.rounds
    result.measured_seconds = outcome.measured_seconds
    result.stopped = outcome.stopped
    cut = result.stopped is None and {"cached", "real"} <= {arm.name for arm in arms}
    if cut and result.paired_rounds < MIN_ROUNDS:  # a segment cut by the allowance: say so
        result.stopped = (
            f"the time allowance ({result.budget_seconds or 0:g} s) left {result.paired_rounds} "
            f"rounds that paired the cached and the real input, where a band needs {MIN_ROUNDS}"
        )
    if outcome.stopped:
        result.notes.append(f"baseline stopped early: {outcome.stopped}")
    if result.stalled_rounds:
        result.notes.append(
            f"{result.stalled_rounds} of {result.rounds} rounds set aside: the cached or real "
            "input's segment ran under a third of its usual speed (the machine stalled)"
        )
    if feeds.real is not None and result.real_samples_per_s is None:
        result.notes.append(
            "the real input gave no measured step (it ran out or failed to start in time)"
        )


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


class NoRealInput(InputError):
    """The fit's input can be read once only (a one-shot generator): nothing real to measure."""


def measure_fit_input(
    model: Any,
    data: Any,
    backend: str | None,
    plan: Plan,
    *,
    training_done: bool,
    need_real: bool,
    source_cache: bool = True,
    hooks: Sequence[tuple[str, Any]] = (),
) -> InputBaseline:
    """The baseline of a running fit, on the input it trains on (``data``: the callback's
    ``DataInfo``): the global random generators are put back and what the measurement made is
    torn down before it returns. ``need_real``: raise :class:`NoRealInput` rather than measure
    the cached input alone. Raises :class:`InputError` (one line) when the input cannot be
    measured."""
    randomness = GlobalRandomState()  # what the feeds and the rounds draw is put back
    feeds = None
    with own_garbage():
        try:
            feeds = feeds_from_session(data, backend, training_done=training_done)
            if need_real and feeds.real is None:
                raise NoRealInput("the input can be read only once")
            return run_baseline(model, feeds, plan, source_cache=source_cache, hooks=hooks)
        finally:
            randomness.restore()
            feeds = None
