"""Timed segments: one arm of a measurement trained (a nested ``fit`` under a clock callback) or
pulled (the input alone) for a target time after its own warm-up."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.errors import one_line
from advisor.probes.framework import is_tf_keras

INFINITE_STEPS = 10**7  # steps_per_epoch of a segment on an endless feed: the clock stops it
ENDLESS_EPOCHS = 10**6  # epochs of a segment on a finite feed: the clock stops it
WARMUP_SHARE = 0.1  # a segment's warm-up also lasts at least this share of its target time


@dataclass
class Segment:
    """One measured stretch of one arm: ``steps`` steps (or batches) in ``seconds``, ending at
    ``at`` (a ``perf_counter`` time; what comes after it — ``fit``'s end, the input's teardown —
    is overhead)."""

    steps: int
    seconds: float
    at: float = 0.0
    restart: float = 0.0  # seconds of its epoch's start charged to these steps (``segment_clock``)

    def rate(self, batch_size: int) -> float | None:
        return (
            self.steps * batch_size / self.seconds if self.seconds > 0 and self.steps > 0 else None
        )


def fit_segment(
    model: Any,
    kwargs: dict[str, Any],
    *,
    finite: bool,
    warm: int,
    seconds: float,
    min_steps: int,
    deadline: float,
    what: str,
    error: Callable[[str], Exception],
    epoch_steps: int | None = None,
    whole_epochs: bool = False,
    stop: Callable[[], bool] | None = None,
    first_tick: list[float] | None = None,
    epoch_length: int | None = None,
    extra: tuple[Any, ...] = (),
) -> Segment | None:
    """Train ``model`` on ``kwargs`` (a nested ``fit``) for one segment and time it.

    Finite feeds (arrays, PyDataset, DataLoader) run whole epochs, as training does, until the
    clock stops them; endless feeds run epochs of ``epoch_steps`` (the real feed's length, so
    that both arms pay the same per-epoch cost) or one long epoch. None: no step after warm-up.
    ``whole_epochs`` and ``epoch_length``: see :func:`segment_clock`; ``stop``: when it returns
    True at a batch end, the segment ends there (a Ctrl-C asked for it: fit ends normally, its
    iterator closes).
    ``first_tick``, when given, receives the time the first execution ended (after compiling).
    ``extra``: callbacks trained with it, after the clock (the baseline's hooks arm).
    """
    clock = segment_clock(
        model, warm, seconds, min_steps, deadline, whole_epochs, stop, epoch_length
    )
    if finite:
        shape: dict[str, Any] = {"epochs": ENDLESS_EPOCHS}
    elif epoch_steps:
        shape = {"epochs": ENDLESS_EPOCHS, "steps_per_epoch": epoch_steps}
    else:
        shape = {"epochs": 1, "steps_per_epoch": INFINITE_STEPS}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(**kwargs, **shape, verbose=0, callbacks=[clock, *extra])
    except Exception as exc:  # noqa: BLE001 — any failure of the input or the step: one clear line
        raise error(f"training on {what} failed: {one_line(exc)}") from None
    if first_tick is not None and clock.first_tick is not None:
        first_tick.append(clock.first_tick)
    return clock.segment()


def segment_clock(
    model: Any,
    warm: int,
    seconds: float,
    min_steps: int,
    deadline: float,
    whole_epochs: bool = False,
    stop: Callable[[], bool] | None = None,
    epoch_length: int | None = None,
) -> Any:
    """A callback of the model's own Keras flavour that times the steps after the warm-up and
    stops training when the segment has lasted ``seconds`` and ``min_steps`` (or at ``deadline``).
    Steps are counted from the batch indices, so ``steps_per_execution`` is exact.

    ``whole_epochs``: when epochs are short, time whole epochs instead, from the first epoch's
    begin to the end of the epoch that completes the segment, so that each epoch's restart (a
    new iterator, its buffers refilled) weighs as much as in training. When no epoch has ended
    by the time the segment is due, epochs are long, and the segment is the steps after the
    warm-up as usual; with ``epoch_length`` (steps in one epoch of the finite input) the
    epoch's restart is charged to them at its share: the time from the epoch's begin to the
    warm-up's end beyond that many steady steps, times measured steps ÷ ``epoch_length``.
    (A restart of 0.16 s on a 30-step epoch of 50 ms steps is 10% of training time; timed
    without it, a change that only shortens steps read 10% high. That is the tf.data guide's
    pipeline on the development VM, whose epochs restarted in 0.12–0.17 s: benchmarks/RESULTS.md,
    "Why they disagree: the epoch boundary" and "The what-if's partial epochs and epoch
    restarts".)"""
    base: Any
    if is_tf_keras(model):
        import tf_keras

        base = tf_keras.callbacks.Callback
    else:
        import keras

        base = keras.callbacks.Callback

    class _SegmentClock(_Clock, base):  # type: ignore[misc, valid-type]
        """The clock on this Keras flavour's callback."""

    return _SegmentClock(warm, seconds, min_steps, deadline, whole_epochs, stop, epoch_length)


class _Clock:
    """What :func:`segment_clock` times and when it stops training, on the flavour's callback
    (the class after it in the method resolution order)."""

    model: Any  # set by Keras on the callback

    def __init__(
        self,
        warm: int,
        seconds: float,
        min_steps: int,
        deadline: float,
        whole_epochs: bool,
        stop: Callable[[], bool] | None,
        epoch_length: int | None,
    ) -> None:
        super().__init__()
        self.warm, self.seconds, self.min_steps, self.deadline = warm, seconds, min_steps, deadline
        self.whole_epochs, self.stop_asked, self.epoch_length = whole_epochs, stop, epoch_length
        self.warm_seconds = WARMUP_SHARE * seconds
        self.steps = 0
        self.begin: int | None = None
        self.first_tick: float | None = None
        self.start: tuple[float, int] | None = None
        self.end: tuple[float, int] | None = None
        self.epoch_start: tuple[float, int] | None = None
        self.epoch_end: tuple[float, int] | None = None
        self.cut = False  # this clock stopped training inside an epoch: that epoch is not whole
        self.first_begin: float | None = None  # when the first epoch began (before its iterator)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.begin = None
        if self.first_begin is None:
            self.first_begin = time.perf_counter()
        if self.whole_epochs and self.epoch_start is None:
            self.epoch_start = (time.perf_counter(), self.steps)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        # Keras ends the epoch it stopped inside too: that partial epoch, its start weighed
        # against a few of its steps, is not a whole epoch (it read a restart-heavy rate).
        if not self.whole_epochs or self.epoch_start is None or self.cut:
            return
        now = time.perf_counter()
        self.epoch_end = (now, self.steps)
        if (
            now - self.epoch_start[0] >= self.seconds
            and self.steps - self.epoch_start[1] >= self.min_steps
        ) or now >= self.deadline:
            self.model.stop_training = True

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.begin = batch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        now = time.perf_counter()
        begin = self.begin
        self.steps += batch - begin + 1 if begin is not None and batch >= begin else 1
        if self.stop_asked is not None and self.stop_asked():
            self.halt()
        if self.start is None:
            if self.first_tick is None:
                self.first_tick = now
            if self.steps >= self.warm and now - self.first_tick >= self.warm_seconds:
                self.start = (now, self.steps)
            elif now >= self.deadline:
                self.halt()
            return
        self.end = (now, self.steps)
        measured = self.steps - self.start[1]
        if now >= self.deadline or (
            measured >= self.min_steps
            and now - self.start[0] >= self.seconds
            and (self.epoch_end is None or not self.whole_epochs)
        ):
            self.halt()

    def halt(self) -> None:
        """Stop training at this batch, inside its epoch."""
        self.model.stop_training = True
        self.cut = True

    def segment(self) -> Segment | None:
        if self.epoch_start is not None and self.epoch_end is not None:
            return Segment(
                self.epoch_end[1] - self.epoch_start[1],
                self.epoch_end[0] - self.epoch_start[0],
                self.epoch_end[0],
            )
        if self.start is None or self.end is None:
            return None
        steps, timed = self.end[1] - self.start[1], self.end[0] - self.start[0]
        restart = 0.0
        if self.epoch_length and self.first_begin is not None and steps > 0 and timed > 0:
            # the segment lies in its first epoch (none ended): what began it beyond steady steps
            lead = self.start[0] - self.first_begin - self.start[1] * timed / steps
            restart = max(0.0, lead) * min(1.0, steps / self.epoch_length)
        return Segment(steps, timed + restart, self.end[0], restart)


def pull_segment(
    iterator: Any, warm: int, seconds: float, min_batches: int, deadline: float
) -> Segment | None:
    """Time ``next(iterator)`` for a segment after ``warm`` pulls (Python-side inputs)."""
    try:
        for _ in range(warm):
            next(iterator)
        t0 = now = time.perf_counter()
        n = 0
        while True:
            next(iterator)
            n += 1
            now = time.perf_counter()
            if (now - t0 >= seconds and n >= min_batches) or now >= deadline:
                break
    except StopIteration:
        return None
    return Segment(n, now - t0, now)


def chunked_segment(
    pull: Callable[[int], None], warm: int, seconds: float, min_batches: int, deadline: float
) -> Segment | None:
    """Time ``pull(k)`` calls (each pulls k batches, e.g. in a graph loop) for a segment. The
    chunk grows towards what the remaining time needs, at most doubling each call."""
    pull(warm)
    t0 = now = time.perf_counter()
    n, chunk = 0, 1
    while True:
        pull(chunk)
        n += chunk
        now = time.perf_counter()
        elapsed = now - t0
        if (elapsed >= seconds and n >= min_batches) or now >= deadline:
            break
        per_batch = elapsed / n
        wanted = max(seconds - elapsed, (min_batches - n) * per_batch, 0.0)
        remaining = max(deadline - now, 0.0)
        chunk = max(
            1,
            min(2 * chunk, int(min(wanted, remaining) / per_batch) if per_batch > 0 else 2 * chunk),
        )
    return Segment(n, now - t0, now)
