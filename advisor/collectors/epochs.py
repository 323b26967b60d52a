"""Epochs: wall time per epoch, split into training and validation, and time to first step.

Only the first batch end matters here (time to first step); after it the collector leaves the
per-batch path. That hook may run on a Keras worker thread (async dispatch on JAX and torch), so
it takes a lock to write its one record exactly once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.store.schema import EpochRecord, FirstStepRecord


class EpochCollector(Collector):
    name = "epochs"
    batch_hook = True
    async_safe = True

    def __init__(self) -> None:
        super().__init__()
        self._first_pending = True
        self._epoch_t0 = 0.0
        self._epoch_step0: int | None = 0
        self._val_t0: float | None = None
        self._val_seconds = 0.0
        self._train_end_t: float | None = None
        self._first_lock = threading.Lock()
        self.epochs: list[EpochRecord] = []

    def on_train_batch_end(self, batch: int) -> None:
        if not self._first_pending:
            return
        now = time.perf_counter()
        with self._first_lock:
            if not self._first_pending:
                return
            self._first_pending = False
            self.batch_hook = False  # off the hot path from the next epoch boundary on
        # A baseline run at train begin (baseline="start") is not part of the time to first step.
        seconds = now - self.session.train_begin_t - self.session.notes.baseline_seconds
        self.session.writer.write(FirstStepRecord(t=time.time(), seconds=seconds))
        self.session.notes.first_step_seconds = seconds  # sizes the what-if's compile estimates

    def on_epoch_begin(self, epoch: int) -> None:
        self._epoch_t0 = time.perf_counter()
        self._epoch_step0 = self.session.iterations()
        self._val_seconds = 0.0
        self._val_t0 = None

    def on_test_begin(self) -> None:
        self._val_t0 = time.perf_counter()

    def on_test_end(self) -> None:
        if self._val_t0 is not None:
            self._val_seconds += time.perf_counter() - self._val_t0
            self._val_t0 = None

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        now = time.perf_counter()
        seconds = now - self._epoch_t0
        windows = [w for w in self.session.notes.windows if w.epoch == epoch]
        tally = (
            self.session.tally
            if self.session.tally is not None and self.session.tally.epoch == epoch
            else None
        )
        if (
            tally is not None and tally.steps is not None
        ):  # the callback's count (Session.close_epoch)
            steps, samples = tally.steps, tally.samples
        else:
            step = self.session.iterations()
            if step is not None and self._epoch_step0 is not None:
                steps = step - self._epoch_step0
            else:  # no optimizer counter: the throughput windows' own count
                steps = sum(w.steps for w in windows)
            samples = _samples(windows, steps, self.session.data.batch_size)
        record = EpochRecord(
            t=time.time(),
            epoch=epoch,
            seconds=seconds,
            train_seconds=seconds - self._val_seconds,
            val_seconds=self._val_seconds,
            steps=steps,
            samples=samples,
        )
        self.epochs.append(record)
        self.session.writer.write(record)


def _samples(windows: list[Any], steps: int, batch: int | None) -> int | None:
    if windows and all(w.samples is not None for w in windows):
        return int(sum(w.samples for w in windows))
    return steps * batch if batch else None
