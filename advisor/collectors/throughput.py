"""Throughput: samples/s and steps/s per wall-clock window, with warm-up kept apart.

The batch-end hook only appends a clock reading; the batch-begin hook counts the call and
compares the latest reading with the window's end. Real step counts come from
``optimizer.iterations`` deltas read at window and epoch boundaries, so they are right under
``steps_per_execution > 1`` (one hook call per execution) and for the last, shorter execution of
an epoch. Samples are the loss tracker's count over the window where it agrees with the steps
(it knows the short last batch, also of an input of unknown length), else steps × global batch
less a known short batch; the epoch's last window ends at the epoch's tally
(``Session.close_epoch``), which leaves out the step Keras counts for finding the end of such an
input.

Windows close on the training thread (batch begin, validation begin, epoch end), never in the
batch-end hook. That makes the batch-end hook safe for Keras's asynchronous callback dispatch on
JAX and torch (``async_safe``): there it runs on a worker thread, after the step's logs are
ready, and appending to a list is all it does. Reading ``optimizer.iterations`` at a boundary
waits for the steps already dispatched, so a window's seconds end when its last step is done;
their batch ends may come later, into the next window, which leaves them out (``_own_stamps``).
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option, count, positive
from advisor.collectors.session import agreed_samples
from advisor.collectors.windows import (
    FIRST_WAIT_MIN_S,
    WindowClock,
    first_step_wait,
    interval_stats,
    rate_line,
    slices,
)
from advisor.store.schema import WindowRecord

log = logging.getLogger("advisor")

OPTIONS = (
    Option(
        "window_seconds",
        "float",
        10.0,
        "length of a throughput window in seconds.",
        positive(),
        old_names=("window_s",),
        recorded_as="window_s",
    ),
    Option(
        "warmup_steps",
        "int",
        5,
        "steps excluded from throughput summaries (tracing, compilation, caches).",
        count(0),
    ),
    Option(
        "log_every_seconds",
        "float | None",
        60.0,
        "period of the one-line samples/s log (0: every window; None: no log).",
        positive(allow_zero=True, optional=True),
        old_names=("log_every_s",),
        recorded_as="log_every_s",
    ),
)
SLICED_WINDOWS = (
    12  # windows (after warm-up) that carry slices: enough for any run too short for windows
)


class ThroughputCollector(Collector):
    name = "throughput"
    batch_hook = True
    batch_begin_hook = True
    async_safe = True  # the batch-end hook is one list append (see the module docs)

    def __init__(
        self, window_s: float = 10.0, warmup_steps: int = 5, log_every_s: float | None = 60.0
    ) -> None:
        super().__init__()
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.window_s = float(window_s)
        self.warmup_steps = max(0, int(warmup_steps))
        self.log_every_s = log_every_s
        self._clock = WindowClock(self.window_s)
        self._warmup_calls = 0
        self._calls = 0  # hook calls begun (all but the current one have ended or been dispatched)
        self._win_call0 = 0
        self._boundaries: list[int] = []  # hook-call counts at which a window must close
        self._next_boundary = -1
        self._profiled_calls: tuple[int, int] | None = None  # (first, last) profiled, 1-based
        self._planned = False
        self._in_epoch = False
        self._epoch = 0
        self._epoch_step0 = 0
        self._partial_counted = False
        self._win_step0 = 0
        self._last_log = 0.0
        self._log_samples = 0
        self._log_seconds = 0.0
        self._sliced = 0
        self._log_times: list[float] = []
        self._epoch_opening = False
        self._epoch_start_s: float | None = None
        self._epoch_start_gc = 0.0  # full garbage collections in that epoch start, seconds
        self._win_seen0: int | None = None  # the loss tracker's sample count at the window's start
        self._owed = 0  # batch ends of closed windows still queued on Keras's worker threads
        self.windows: list[WindowRecord] = []

    # -- hooks ---------------------------------------------------------------------------------
    def on_train_begin(self) -> None:
        spe = max(1, self.session.steps_per_execution)
        # Warm-up: the first ceil(warmup_steps / spe) hook calls form a window of their own.
        self._warmup_calls = -(-self.warmup_steps // spe) if self.warmup_steps else 0
        self._last_log = time.perf_counter()
        self.session.notes.logging = self.log_every_s is not None
        self.session.notes.windows = self.windows

    def on_epoch_begin(self, epoch: int) -> None:
        if not self._planned:  # after every collector's on_train_begin (the profiler's too)
            self._planned = True
            self._plan_boundaries()
        self._epoch = epoch
        self._start_window(
            time.perf_counter(), self.session.iterations(), self._calls, self.session.samples_seen()
        )
        self._epoch_step0 = self._win_step0
        self._epoch_opening = True
        self._partial_counted = False
        self._owed = 0  # Keras ran every queued batch end before the epoch ended
        self._in_epoch = True

    def on_train_batch_begin(self, batch: int) -> None:
        if self._epoch_opening:
            # The epoch's first step counts from its own begin: what came before it (the input
            # iterator's creation, epoch-begin callbacks) is not a step, and not a step outlier.
            self._epoch_opening = False
            now = time.perf_counter()
            self._epoch_start_s = now - self._clock.t0
            self._epoch_start_gc = _ended_inside(self.session.notes.gc_spans, self._clock.t0, now)
            # The window's length counts from here too: counted from epoch begin, an epoch start
            # longer than the window closed it at this hook with no step of its own, and the
            # start fell outside every window's seconds while the next window recorded it.
            self._clock.steps_begin(now)
        done = self._calls
        self._calls = done + 1
        if done == self._next_boundary or self._clock.stamps[-1] >= self._clock.close_at:
            self._close_window(done, warmup=done <= self._warmup_calls)

    def on_train_batch_end(self, batch: int) -> None:
        self._clock.stamps.append(time.perf_counter())

    def on_test_begin(self) -> None:
        # Validation inside fit: close the training window so it holds training time only.
        if self._in_epoch:
            self._close_window(self._calls, warmup=self._calls <= self._warmup_calls, last=True)
            self._in_epoch = False

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        if self._in_epoch:
            self._close_window(self._calls, warmup=self._calls <= self._warmup_calls, last=True)
            self._in_epoch = False
        self._maybe_log(
            force=not self._log_times
        )  # a first line at the first epoch end, then as often as asked

    def on_train_end(self) -> None:
        """Record how often the throughput was reported (checklist M101): lines logged and the
        longest stretch of training without one."""
        from advisor.store.schema import ContextRecord

        marks = [self.session.train_begin_t, *self._log_times, time.perf_counter()]
        gap = max(b - a for a, b in itertools.pairwise(marks))
        self.session.writer.write(
            ContextRecord(
                t=time.time(),
                values={
                    "throughput.log_lines": len(self._log_times),
                    "throughput.log_gap_s": round(gap, 3),
                },
            )
        )

    # -- windows -------------------------------------------------------------------------------
    def _plan_boundaries(self) -> None:
        """Windows end where warm-up ends and where a profiler window starts and stops."""
        marks = {self._warmup_calls}
        window = self.session.notes.profiler_window
        if window:
            spe = max(1, self.session.steps_per_execution)
            first = (int(window[0]) - 1) // spe + 1  # 1-based hook calls inside the window
            last = (int(window[1]) - 1) // spe + 1
            self._profiled_calls = (first, last)
            marks |= {first - 1, last}
        self._boundaries = sorted(m for m in marks if m > 0)
        self._advance_boundary(self._calls)

    def _advance_boundary(self, done: int) -> None:
        upcoming = [m for m in self._boundaries if m > done]
        self._next_boundary = upcoming[0] if upcoming else -1

    def _window_profiled(self, done: int) -> bool:
        if self._profiled_calls is None:
            return False
        first, last = self._profiled_calls
        return self._win_call0 < last and done >= first

    def _start_window(
        self, now: float, step: int | None, done: int, seen: int | None = None
    ) -> None:
        self._win_call0 = done
        self._win_step0 = (
            step if step is not None else done * max(1, self.session.steps_per_execution)
        )
        self._win_seen0 = seen
        self._clock.open(now)

    def _close_window(self, done: int, warmup: bool, last: bool = False) -> None:
        """Close the window after ``done`` hook calls; runs on the training thread. The epoch's
        ``last`` window ends where the epoch's tally (``Session.close_epoch``) says it ended."""
        step = self.session.iterations()  # waits for dispatched steps (JAX, torch on GPU) to finish
        now = time.perf_counter()
        if step is None:
            step = done * max(1, self.session.steps_per_execution)
        next_step0 = step
        tally = self.session.tally if last else None
        if tally is not None and tally.epoch == self._epoch and tally.steps is not None:
            step = min(step, self._epoch_step0 + tally.steps)  # not the step that found the end
        seen = self.session.samples_seen()
        steps = step - self._win_step0
        stamps = self._own_stamps(done)
        if steps > 0:
            samples = self._samples(steps, step, seen)
            spe = max(1, self.session.steps_per_execution)
            wait = first_step_wait(stamps) if self._epoch_start_s is not None and not warmup else 0
            if wait:  # a compile or a full garbage collection in that step is no wait for input
                notes = self.session.notes
                wait = _less_compiles(wait, stamps, [*notes.compile_spans, *notes.gc_spans])
            if wait:  # the first step waited for the new iterator: epoch-start time, not a step
                stamps[0] += wait
            stats = interval_stats(stamps, spe, time.time() - time.perf_counter())
            if stats.get("step_count", 0) > steps + 1:
                # Second line of defence: the hooks and the step counter disagree about this
                # window although its batch ends were counted (``_own_stamps``). Its steps,
                # samples and seconds stand; its per-step times cannot be told apart, and a reader
                # would refuse the window.
                stats = {}
            if self._epoch_start_s is not None:
                stats["epoch_start_seconds"] = self._epoch_start_s + wait
                if self._epoch_start_gc:
                    stats["epoch_start_gc_seconds"] = round(self._epoch_start_gc, 6)
                if wait:
                    stats["epoch_first_wait_seconds"] = wait
                self._epoch_start_s = None
            if not warmup and self._sliced < SLICED_WINDOWS:
                self._sliced += 1
                stats["slices"] = slices(stamps, spe)
            record = WindowRecord(
                t=time.time(),
                epoch=self._epoch,
                seconds=now - self._clock.t0,
                steps=steps,
                samples=samples,
                step_begin=self._win_step0,
                step_end=step,
                warmup=warmup,
                profiled=self._window_profiled(done),
                **stats,
            )
            self.windows.append(record)
            self.session.writer.write(record)
            if not warmup and not record.profiled and samples is not None:
                self._log_samples += samples
                self._log_seconds += record.seconds
        self._start_window(now, next_step0, done, seen)
        self._advance_boundary(done)
        self._maybe_log()

    def _own_stamps(self, done: int) -> list[float]:
        """The window's batch-end stamps, sorted (worker threads append them, not always in
        order), its opening first.

        A window closes on the training thread after ``done`` hook calls, and the step counter
        counts all their steps; but some of their batch ends may still wait on Keras's worker
        threads (JAX, torch, a busy host) and land in the next window. Counted there, they gave
        it more intervals than steps (a JAX fit whose warm-up window closed after two steps
        before either batch end came: the next window timed seven intervals for five steps, and
        the reader refused it). So the batch ends a window closes without are owed, and the next
        windows' earliest stamps pay them: dropped, the last one paid becomes the opening."""
        stamps = sorted(self._clock.stamps)
        paid = min(self._owed, len(stamps) - 1)
        stamps = stamps[paid:]
        self._owed += max(0, done - self._win_call0 - (len(stamps) - 1)) - paid
        return stamps

    def _goodput(self, now: float) -> float | None:
        """Training steps ÷ the fit's wall clock so far, from the goodput ledger (None: none)."""
        ledger = self.session.ledger
        if ledger is None or ledger.wall(now) <= 0:
            return None
        from advisor.collectors.ledger import TRAIN

        return ledger.snapshot(now).get(TRAIN, 0.0) / ledger.wall(now)

    def _samples(self, steps: int, step_now: int, seen: int | None) -> int | None:
        """The window's samples: the loss tracker's count where it agrees with the steps (the
        only count that knows the short last batch of an input of unknown length), else steps ×
        batch, less the known short batch if this window holds it."""
        batch = self.session.data.batch_size
        if batch is None:
            return None
        counted = agreed_samples(
            steps,
            batch,
            None if self._win_seen0 is None or seen is None else seen - self._win_seen0,
        )
        if counted is not None:
            self._partial_counted = self._partial_counted or counted < steps * batch
            return counted
        short = (
            0 if self._partial_counted else self.session.data.short_by(step_now - self._epoch_step0)
        )
        self._partial_counted = self._partial_counted or short > 0
        return steps * batch - short

    def _maybe_log(self, force: bool = False) -> None:
        if self.log_every_s is None or self._log_seconds <= 0:
            return
        now = time.perf_counter()
        if not force and now - self._last_log < self.log_every_s:
            return
        self._last_log = now
        rate = self._log_samples / self._log_seconds * max(1, self.session.num_workers)
        log.info(rate_line(rate, self.session.price_per_hour, self._goodput(now)))
        self._log_times.append(now)
        self.session.notes.last_samples_per_s = rate


def _ended_inside(spans: list[tuple[float, float]], begin: float, end: float) -> float:
    """Seconds of the (end, seconds) spans that ended between ``begin`` and ``end``."""
    return sum(min(seconds, stop - begin) for stop, seconds in spans if begin < stop <= end)


def _less_compiles(wait: float, stamps: list[float], spans: list[tuple[float, float]]) -> float:
    """The first step's wait less the compile events (and full garbage collections) that ended
    inside it."""
    compiled = sum(seconds for end, seconds in spans if stamps[0] < end <= stamps[1])
    left = wait - compiled
    return left if left >= FIRST_WAIT_MIN_S else 0.0
