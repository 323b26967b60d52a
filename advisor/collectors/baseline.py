"""Cached-input baseline: how fast would this model train if its input cost nothing?

Over the same number of steps, with the same compiled train step, the baseline measures

- training throughput on the real input,
- training throughput on the first batch served from memory (``take(1).cache().repeat()`` for
  tf.data; the first batch repeated for arrays, generators, PyDataset and DataLoader): the ceiling,
- the input alone, iterated without training (data-only),
- for tf.data pipelines that read files, training with a cache right after the reading stage.

``1 − real ÷ cached`` is the share of step time the input costs (``input.bound_fraction``).

It trains the user's model itself through a nested ``fit`` on our feeds, then restores weights,
optimizer and metric state bit for bit (``model_state.ModelState``); the user's callbacks never see
those steps. Use it from a callback, ``AdvisorCallback(baseline="end", baseline_steps=20)``, or
directly: ``advisor.measure_input(model, dataset, steps=20)``.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from advisor.collectors.base import Collector
from advisor.collectors.input_feeds import (
    Feeds,
    InputError,
    epoch_batches,
    feeds_from_session,
    feeds_from_user,
    one_line,
)
from advisor.errors import UsageError
from advisor.probes.framework import backend_of, is_tf_keras, steps_per_execution

log = logging.getLogger("advisor")

DEFAULT_STEPS = 20
DEFAULT_TIMEOUT_S = 60.0
MODES = ("start", "end")

__all__ = ["BaselineCollector", "InputBaseline", "InputError", "measure_input", "run_baseline"]


@dataclass
class InputBaseline:
    """Throughputs (samples/s) measured side by side; None where not measured."""

    input_kind: str
    batch_size: int
    steps: int
    warmup_steps: int
    real_samples_per_s: float | None = None
    cached_samples_per_s: float | None = None
    data_only_samples_per_s: float | None = None
    source_cached_samples_per_s: float | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def bound_fraction(self) -> float | None:
        """Share of step time spent waiting for input: 1 − real ÷ cached (0 when not input-bound)."""
        if not self.real_samples_per_s or not self.cached_samples_per_s:
            return None
        return max(0.0, 1.0 - self.real_samples_per_s / self.cached_samples_per_s)

    @property
    def data_only_ratio(self) -> float | None:
        if not self.real_samples_per_s or not self.data_only_samples_per_s:
            return None
        return self.data_only_samples_per_s / self.real_samples_per_s

    @property
    def source_cache_gain(self) -> float | None:
        if not self.real_samples_per_s or not self.source_cached_samples_per_s:
            return None
        return max(0.0, self.source_cached_samples_per_s / self.real_samples_per_s - 1.0)

    def summary(self) -> str:
        parts = []
        if self.bound_fraction is not None:
            parts.append(f"input costs {self.bound_fraction:.0%} of step time; with input removed this model "
                         f"trains at {self.cached_samples_per_s:.0f} samples/s instead of {self.real_samples_per_s:.0f}")
        elif self.cached_samples_per_s is not None:
            parts.append(f"cached-input ceiling {self.cached_samples_per_s:.0f} samples/s")
        if self.data_only_samples_per_s is not None:
            parts.append(f"the input alone delivers {self.data_only_samples_per_s:.0f} samples/s")
        if self.source_cached_samples_per_s is not None:
            parts.append(f"with a cache after the file source: {self.source_cached_samples_per_s:.0f} samples/s")
        return "; ".join(parts) or "nothing measured"

    def to_record(self, mode: str) -> Any:
        from advisor.store.schema import BaselineRecord

        return BaselineRecord(
            t=time.time(), steps=self.steps, batch_size=self.batch_size, input_kind=self.input_kind,
            real_samples_per_s=self.real_samples_per_s, cached_samples_per_s=self.cached_samples_per_s,
            data_only_samples_per_s=self.data_only_samples_per_s,
            source_cached_samples_per_s=self.source_cached_samples_per_s,
            mode=mode, warmup_steps=self.warmup_steps, seconds=self.seconds,
        )


# ---------------------------------------------------------------------------------------------
# the plain API


def measure_input(model: Any, data: Any, steps: int | None = DEFAULT_STEPS, *, batch_size: int | None = None,
                  warmup_steps: int | None = None, source_cache: bool = True, data_only: bool = True,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> InputBaseline:
    """Measure real, cached-input, data-only (and source-cached) throughput of ``model`` on ``data``.

    ``data`` is what you would pass to ``fit``: a tf.data.Dataset, a tuple ``(x, y)`` of arrays
    (with ``batch_size``, default 32), a keras.utils.PyDataset, a torch DataLoader or a generator.
    ``steps=None`` measures one epoch. The model must be compiled; its weights and optimizer state
    are the same afterwards. Raises ``InputError`` (one line) for bad input.
    """
    _check_model(model)
    backend = backend_of(model)
    spe = steps_per_execution(model)
    warm = _round_up(warmup_steps if warmup_steps is not None else 2 * spe, spe)
    if steps is None:
        epoch = epoch_batches(data, batch_size)
        if epoch - warm < 1:
            raise InputError(f"one epoch has {epoch} batches, too few to measure after {warm} warm-up steps; "
                             "pass steps=N")
        n = epoch - warm
    else:
        if not isinstance(steps, int) or steps < 1:
            raise InputError(f"steps must be a positive integer, got {steps!r}")
        n = _round_up(steps, spe)
    feeds = feeds_from_user(data, warm + n, batch_size, backend, legacy=is_tf_keras(model))
    return run_baseline(model, feeds, warm, n, source_cache=source_cache, data_only=data_only,
                        timeout_s=timeout_s)


def _check_model(model: Any) -> None:
    if not hasattr(model, "fit") or not hasattr(model, "variables"):
        raise InputError(f"expected a Keras model, got {type(model).__name__}")
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", True):
        raise InputError("the model is not compiled: call model.compile(optimizer, loss) first")


def _round_up(value: int, multiple: int) -> int:
    value = max(int(value), 1)
    return -(-value // multiple) * multiple


# ---------------------------------------------------------------------------------------------
# the engine


def run_baseline(model: Any, feeds: Feeds, warm: int, n: int, *, source_cache: bool = True,
                 data_only: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S) -> InputBaseline:
    """Measure every feed on ``model``; its training state is restored exactly afterwards."""
    from advisor.collectors.model_state import ModelState, ensure_built

    t0 = time.perf_counter()
    spe = steps_per_execution(model)
    result = InputBaseline(feeds.kind, feeds.batch_size, n, warm, notes=list(feeds.notes))
    if feeds.first is not None:
        ensure_built(model, feeds.first)
    state = ModelState(model)
    try:
        # The ceiling first, while no pipeline threads run; best of two short runs, since a
        # ceiling is the fastest the step goes and a single stall would lower it.
        for _ in range(2):
            rate = _fit_rate(model, feeds.cached, warm, n, feeds.batch_size, spe, timeout_s, "the cached input")
            state.restore()
            if rate is not None and (result.cached_samples_per_s is None or rate > result.cached_samples_per_s):
                result.cached_samples_per_s = rate
        if feeds.real is not None:
            n_real = n
            if feeds.real_batches is not None:
                n_real = (feeds.real_batches - warm) // spe * spe
            if n_real >= spe:
                result.real_samples_per_s = _fit_rate(model, feeds.real, warm, n_real, feeds.batch_size,
                                                      spe, timeout_s, "the real input")
                state.restore()
            else:
                result.notes.append(f"the input has {feeds.real_batches} batches: too few for a real-input run")
        if source_cache and feeds.source_cached is not None:
            try:
                source_kwargs = feeds.source_cached()
            except Exception as exc:  # graph surgery is best effort: report, do not fail the baseline
                source_kwargs = None
                result.notes.append(f"no source-cache run: {one_line(exc)}")
            if source_kwargs is not None:
                result.source_cached_samples_per_s = _fit_rate(model, source_kwargs, warm, n, feeds.batch_size,
                                                               spe, timeout_s, "the source-cached input")
    finally:
        state.restore()
    if data_only and feeds.data_only is not None:
        try:
            seconds = feeds.data_only(warm, n)
        except Exception as exc:
            raise InputError(f"iterating the input failed: {one_line(exc)}") from None
        if seconds:
            result.data_only_samples_per_s = n * feeds.batch_size / seconds
    result.seconds = time.perf_counter() - t0
    return result


def _fit_rate(model: Any, kwargs: dict[str, Any], warm: int, n: int, batch_size: int, spe: int,
              timeout_s: float, what: str) -> float | None:
    """samples/s over the ``n`` steps after ``warm`` warm-up steps of a nested ``fit``."""
    clock = _clock(model, time.perf_counter() + timeout_s)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(**kwargs, steps_per_epoch=warm + n, epochs=1, verbose=0, callbacks=[clock])
    except Exception as exc:
        raise InputError(f"training on {what} failed: {one_line(exc)}") from None
    times: list[float] = clock.times
    warm_ticks = warm // spe
    if len(times) <= warm_ticks:
        return None
    steps = (len(times) - warm_ticks) * spe
    seconds = times[-1] - times[warm_ticks - 1]
    return steps * batch_size / seconds if seconds > 0 else None


def _clock(model: Any, deadline: float) -> Any:
    """A callback of the model's own Keras flavour that stamps each batch end."""
    base: Any
    if type(model).__module__.startswith("tf_keras") or is_tf_keras(model):
        import tf_keras

        base = tf_keras.callbacks.Callback
    else:
        import keras

        base = keras.callbacks.Callback

    class _Clock(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = time.perf_counter()
            self.times.append(now)
            if now > deadline:
                self.model.stop_training = True

    return _Clock()


# ---------------------------------------------------------------------------------------------
# the collector


def normalize_mode(value: Any) -> str | None:
    if value in (None, False, "", "off", "none"):
        return None
    if value is True:
        return "end"
    if value in MODES:
        return str(value)
    raise UsageError(f"baseline must be 'end', 'start' or None, got {value!r}")


class BaselineCollector(Collector):
    """Runs the baseline at train begin (``"start"``) or train end (``"end"``) and records it."""

    name = "baseline"

    def __init__(self, mode: Any = "end", steps: int = DEFAULT_STEPS, source_cache: bool = True,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__()
        self.mode = normalize_mode(mode)
        if not isinstance(steps, int) or steps < 1:
            raise UsageError(f"baseline_steps must be a positive integer, got {steps!r}")
        self.steps = steps
        self.source_cache = source_cache
        self.timeout_s = timeout_s
        self.result: InputBaseline | None = None

    def on_train_begin(self) -> None:
        if self.mode == "start":
            self._run()

    def on_train_end(self) -> None:
        if self.mode == "end":
            self._run()

    def _run(self) -> None:
        from advisor.store.schema import BaselineRecord

        s = self.s
        if s.num_workers > 1:
            s.event("baseline", "baseline skipped: it runs on single-worker jobs only (workers would "
                    "have to train it in lockstep)", level="info")
            return
        model = s.model
        spe = steps_per_execution(model)
        warm = 2 * spe
        n = _round_up(self.steps, spe)
        t0 = time.perf_counter()
        try:
            feeds = feeds_from_session(s.data, warm + n, s.backend, training_done=self.mode == "end")
            self.result = run_baseline(model, feeds, warm, n, source_cache=self.source_cache,
                                       timeout_s=self.timeout_s)
        except InputError as exc:
            s.writer.write(BaselineRecord(t=time.time(), steps=n, input_kind=s.data.kind, error=str(exc),
                                          mode=self.mode, warmup_steps=warm, seconds=time.perf_counter() - t0))
            s.event("baseline", f"baseline not measured: {exc}", level="warning")
            log.warning("advisor: baseline not measured: %s", exc)
            return
        s.writer.write(self.result.to_record(self.mode or "end"))
        s.shared["baseline"] = self.result
        s.shared["baseline_seconds"] = self.result.seconds
        for note in self.result.notes:
            s.event("baseline", note, level="info")
        if s.rank == 0:
            log.info("advisor: baseline (%d steps, %.1f s): %s", n, self.result.seconds, self.result.summary())
