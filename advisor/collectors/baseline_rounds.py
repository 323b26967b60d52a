"""The baseline's measuring loop: time-boxed segments, interleaved arms, repeated rounds.

An *arm* is one way of feeding the model (the cached first batch, the real input, the input with
a cache after its file source) or of pulling the input alone (data-only). A *segment* measures one
arm for a target time (``segment_s``, and at least ``min_steps`` steps) after its own warm-up. A
*round* measures every arm once; rounds alternate their order (A B C, C B A, …) so that drift and
load hit every arm alike, and each round gives one paired value per comparison. The whole
measurement stays inside a time budget: segments shrink so that the planned rounds fit, are
capped so that ``MIN_ROUNDS`` rounds fit, and later rounds start only while one more fits.
"""

from __future__ import annotations

import gc
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from advisor.probes.framework import is_tf_keras
from advisor.store.bands import MIN_ROUNDS

INFINITE_STEPS = 10**7  # steps_per_epoch of a segment on an endless feed: the clock stops it
ENDLESS_EPOCHS = 10**6  # epochs of a segment on a finite feed: the clock stops it
WARMUP_SHARE = 0.1  # a segment's warm-up also lasts at least this share of its target time


@dataclass(frozen=True)
class Plan:
    """How long to measure: ``seconds`` over all arms and rounds, at least ``min_steps`` measured
    steps per arm, ``rounds`` rounds, everything after a short calibration within ``max_seconds``."""

    seconds: float
    min_steps: int
    rounds: int
    max_seconds: float
    warmup_steps: int

    def segment_seconds(self, arms: int) -> float:
        return self.seconds / max(1, self.rounds * arms)

    def segment_min_steps(self, multiple: int) -> int:
        return round_up(math.ceil(self.min_steps / max(1, self.rounds)), multiple)


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
        return self.steps * batch_size / self.seconds if self.seconds > 0 and self.steps > 0 else None


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


def run_rounds(arms: list[Arm], plan: Plan, deadline: float, restore: Callable[[], None],
               overhead_s: float = 0.0) -> Outcome:
    """Measure every arm once per round, alternating the order, until ``plan.rounds`` rounds are
    done or the budget (``deadline``, a ``perf_counter`` time) would be exceeded.

    Every segment first sets aside what each remaining segment costs beyond its measured time
    (``fit`` set-up, warm-up): ``overhead_s`` at first (from the calibration), then the largest
    seen so far. Its target time shrinks so that all planned rounds fit the budget (the rounds
    make the band; a shorter segment only widens it), and it is capped at its share of the time
    left for the first MIN_ROUNDS rounds, however many steps it still needs. The budget is hard:
    a machine that stalls a step for longer than a share can leave fewer than MIN_ROUNDS rounds,
    and then the figure has no band (and no verdict).
    """
    outcome = Outcome()
    segment_s = plan.segment_seconds(len(arms))
    round_times: list[float] = []
    overheads: list[float] = []  # per segment: wall time beyond the measured time
    for index in range(plan.rounds):
        now = time.perf_counter()
        if index >= MIN_ROUNDS and round_times and now + max(round_times) > deadline:
            outcome.stopped = f"the time budget ({plan.max_seconds:g} s) allowed {index} of {plan.rounds} rounds"
            break
        if now >= deadline:
            outcome.stopped = f"the time budget ({plan.max_seconds:g} s) ran out after {index} rounds"
            break
        started = now
        order = arms if index % 2 == 0 else arms[::-1]
        try:
            for position, arm in enumerate(order):
                now = time.perf_counter()
                if now >= deadline:  # nothing could be measured: the round's other arms get no segment
                    arm.segments.append(None)
                    continue
                left = (max(MIN_ROUNDS - index, 1) * len(arms)) - position
                overhead = max(overheads) if overheads else overhead_s
                share = max(0.0, deadline - now - left * overhead) / left
                planned = (plan.rounds - index) * len(arms) - position
                target = min(segment_s, max(0.0, deadline - now - planned * overhead) / planned)
                segment = arm.measure(target, plan.segment_min_steps(1), min(now + overhead + share, deadline))
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


@contextmanager
def own_garbage(collect: Callable[[], object] = gc.collect) -> Iterator[None]:
    """Around a baseline or a what-if: destroy the iterators it made before it returns (with
    ``collect``). An iterator over a pipeline copy that is still alive at interpreter exit, its
    prefetch thread waiting in a ``tf.py_function`` for the GIL, hangs the process's shutdown.

    The objects older than the measurement are frozen (``gc.freeze``) meanwhile, so its
    collections look only at what it made: a full collection of a process with TensorFlow, JAX
    and torch loaded took 0.35–0.4 s, in a long-lived process more, against well under a
    millisecond. When something else has frozen objects already (a pre-fork server does),
    nothing is frozen here, the collection is a full one, and their freeze is left alone."""
    global _frozen_here
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
        _frozen_here = True
    try:
        yield
    finally:
        try:
            collect()
        finally:
            if freeze:
                _frozen_here = False
                gc.unfreeze()


_frozen_here = False  # own_garbage froze the older objects: the young generations are ours


def tear_down(backend: str | None) -> None:
    """After a segment: destroy the input it iterated (its iterator, prefetch threads, loader
    workers) before the next segment starts. A ``fit`` stopped mid-epoch leaves its iterator
    to the garbage collector, and a parallel pipeline's threads go on filling its buffers
    meanwhile: measured on a CPU-bound pipeline, the next segment (the cached input's) ran a
    third slower beside them. Cheap inside ``own_garbage`` (only what the measurement made is
    looked at)."""
    release_loader_workers(backend)
    stop_pydataset_enqueuers()
    gc.collect()


def release_loader_workers(backend: str | None) -> int:
    """Shut down the worker processes of the torch ``DataLoader`` iterators the measurement made,
    on Keras's torch ``backend`` (elsewhere: nothing).

    Keras on torch iterates the loader itself, and training stopped mid-epoch leaves that
    iterator in a reference cycle; destroyed by the garbage collector, a worker pool's shutdown
    waits torch's status interval (5 s) for each worker before killing it (~10 s a segment with
    two workers), while the same shutdown called on the intact iterator takes ~0.04 s. On
    TensorFlow a tf.data generator owns the loader's iterator (and tears it down in well under
    a second): not ours to shut. Only the young generations are searched, and only while
    ``own_garbage`` has frozen everything older, so an iterator the user made is never touched;
    persistent pools belong to their loader and are left alone. Returns the iterators shut."""
    module = sys.modules.get("torch.utils.data.dataloader")
    kind = getattr(module, "_MultiProcessingDataLoaderIter", None)
    if backend != "torch" or kind is None or not _frozen_here:
        return 0
    shut = 0
    for obj in _made_here():
        if type(obj) is kind and not getattr(obj, "_persistent_workers", False) \
                and not getattr(obj, "_shutdown", True):
            try:
                obj._shutdown_workers()
                shut += 1
            except Exception:  # a pool already half gone: the collector finishes it
                pass
    return shut


def stop_pydataset_enqueuers() -> int:
    """Stop the worker threads and pools of the ``keras.utils.PyDataset`` inputs (workers > 1 or
    multiprocessing) that the measurement trained on. Returns the enqueuers stopped.

    Keras stops a PyDataset's enqueuer when an epoch's iterator runs to its end; a ``fit`` that
    stops inside an epoch (every timed segment does) leaves it running. Its feeding thread then
    waits forever to queue one more batch, and with it stay a pool of workers (threads, or
    processes with multiprocessing) and up to ``max_queue_size`` finished batches: measured, a
    what-if of ``pydataset_workers`` left 42 threads behind in the user's process. Keras's own
    ``stop()`` (the one an epoch's end calls) drains the queue, so its batches are freed, and
    joins the thread. Only enqueuers made while ``own_garbage`` froze the older objects are
    looked at; the user's own are never touched."""
    module = sys.modules.get("keras.src.trainers.data_adapters.py_dataset_adapter")
    kind = getattr(module, "PyDatasetEnqueuer", None)
    if kind is None or not _frozen_here:
        return 0
    stopped = 0
    for obj in _made_here():
        if isinstance(obj, kind) and getattr(obj, "running", False):
            try:
                obj.stop()
                stopped += 1
            except Exception:  # a worker's error re-raised by the drain: the enqueuer is stopped
                pass
    return stopped


def _made_here() -> Iterator[Any]:
    """The objects of the young generations: while ``own_garbage`` has frozen everything older,
    only what the measurement made (callers check ``_frozen_here`` first)."""
    for generation in (0, 1, 2):
        yield from gc.get_objects(generation)


# ---------------------------------------------------------------------------------------------
# training segments


def fit_segment(model: Any, kwargs: dict[str, Any], *, finite: bool, warm: int, seconds: float,
                min_steps: int, deadline: float, what: str, error: Callable[[str], Exception],
                epoch_steps: int | None = None, whole_epochs: bool = False,
                stop: Callable[[], bool] | None = None, first_tick: list[float] | None = None,
                epoch_length: int | None = None) -> Segment | None:
    """Train ``model`` on ``kwargs`` (a nested ``fit``) for one segment and time it.

    Finite feeds (arrays, PyDataset, DataLoader) run whole epochs, as training does, until the
    clock stops them; endless feeds run epochs of ``epoch_steps`` (the real feed's length, so
    that both arms pay the same per-epoch cost) or one long epoch. None: no step after warm-up.
    ``whole_epochs`` and ``epoch_length``: see :func:`segment_clock`; ``stop``: when it returns True at a batch end,
    the segment ends there (a Ctrl-C asked for it: fit ends normally, its iterator closes).
    ``first_tick``, when given, receives the time the first execution ended (after compiling).
    """
    clock = segment_clock(model, warm, seconds, min_steps, deadline, whole_epochs, stop, epoch_length)
    if finite:
        shape: dict[str, Any] = {"epochs": ENDLESS_EPOCHS}
    elif epoch_steps:
        shape = {"epochs": ENDLESS_EPOCHS, "steps_per_epoch": epoch_steps}
    else:
        shape = {"epochs": 1, "steps_per_epoch": INFINITE_STEPS}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(**kwargs, **shape, verbose=0, callbacks=[clock])
    except Exception as exc:  # noqa: BLE001 — any failure of the input or the step: one clear line
        from advisor.collectors.feed_base import one_line

        raise error(f"training on {what} failed: {one_line(exc)}") from None
    if first_tick is not None and clock.first_tick is not None:
        first_tick.append(clock.first_tick)
    return clock.segment()


def segment_clock(model: Any, warm: int, seconds: float, min_steps: int, deadline: float,
                  whole_epochs: bool = False, stop: Callable[[], bool] | None = None,
                  epoch_length: int | None = None) -> Any:
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
    without it, a change that only shortens steps read 10% high.)"""
    base: Any
    if is_tf_keras(model):
        import tf_keras

        base = tf_keras.callbacks.Callback
    else:
        import keras

        base = keras.callbacks.Callback
    warm_seconds = WARMUP_SHARE * seconds

    class _SegmentClock(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
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
            if whole_epochs and self.epoch_start is None:
                self.epoch_start = (time.perf_counter(), self.steps)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            # Keras ends the epoch it stopped inside too: that partial epoch, its start weighed
            # against a few of its steps, is not a whole epoch (it read a restart-heavy rate).
            if not whole_epochs or self.epoch_start is None or self.cut:
                return
            now = time.perf_counter()
            self.epoch_end = (now, self.steps)
            if (now - self.epoch_start[0] >= seconds and self.steps - self.epoch_start[1] >= min_steps) \
                    or now >= deadline:
                self.model.stop_training = True

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.begin = batch

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = time.perf_counter()
            begin = self.begin
            self.steps += batch - begin + 1 if begin is not None and batch >= begin else 1
            if stop is not None and stop():
                self.halt()
            if self.start is None:
                if self.first_tick is None:
                    self.first_tick = now
                if self.steps >= warm and now - self.first_tick >= warm_seconds:
                    self.start = (now, self.steps)
                elif now >= deadline:
                    self.halt()
                return
            self.end = (now, self.steps)
            measured = self.steps - self.start[1]
            if now >= deadline or (measured >= min_steps and now - self.start[0] >= seconds
                                   and (self.epoch_end is None or not whole_epochs)):
                self.halt()

        def halt(self) -> None:
            """Stop training at this batch, inside its epoch."""
            self.model.stop_training = True
            self.cut = True

        def segment(self) -> Segment | None:
            if self.epoch_start is not None and self.epoch_end is not None:
                return Segment(self.epoch_end[1] - self.epoch_start[1], self.epoch_end[0] - self.epoch_start[0],
                               self.epoch_end[0])
            if self.start is None or self.end is None:
                return None
            steps, timed = self.end[1] - self.start[1], self.end[0] - self.start[0]
            restart = 0.0
            if epoch_length and self.first_begin is not None and steps > 0 and timed > 0:
                # the segment lies in its first epoch (none ended): what began it beyond steady steps
                lead = self.start[0] - self.first_begin - self.start[1] * timed / steps
                restart = max(0.0, lead) * min(1.0, steps / epoch_length)
            return Segment(steps, timed + restart, self.end[0], restart)

    return _SegmentClock()


def pull_segment(iterator: Any, warm: int, seconds: float, min_batches: int, deadline: float) -> Segment | None:
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


def chunked_segment(pull: Callable[[int], None], warm: int, seconds: float, min_batches: int,
                    deadline: float) -> Segment | None:
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
        chunk = max(1, min(2 * chunk, int(min(wanted, remaining) / per_batch) if per_batch > 0 else 2 * chunk))
    return Segment(n, now - t0, now)
