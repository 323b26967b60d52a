"""Custom training loops: ``advisor.track`` records a loop without ``model.fit`` into a run
directory.

    with advisor.track(batch_size=64, runs_dir="advisor-runs") as run:
        for epoch in range(3):
            for x, y in loader:
                loss = train_step(x, y)
                run.step()                   # one optimizer step of 64 samples (or run.step(n))
            with run.validation():           # excluded from training throughput
                evaluate()
            run.epoch()                      # the epoch ends here

The run directory is the one ``AdvisorCallback`` writes: throughput windows (warm-up apart), epochs
split into training and validation, time to the first step, context, telemetry and events, so
every rule whose facts a loop can give decides. ``@advisor.tracked(...)`` wraps a ``train()``
function or method in the same way.

``step()`` is the hot path: a counter, a sum and one clock read; windows close inside it only when
``window_seconds`` has passed. Nothing here raises into the loop: a failure is logged once,
recorded as an event, and recording stops while training goes on.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from advisor.collectors.collector import Guard
from advisor.collectors.opening import report_closed
from advisor.collectors.options import Pricing, check_names, options_from
from advisor.collectors.session import Session
from advisor.collectors.windows import WindowClock, ensure_log_handler, interval_stats, rate_line
from advisor.store.schema import EpochRecord, FirstStepRecord, WindowRecord
from advisor.tracking.context import check_loop_args
from advisor.tracking.flop_source import FlopSource
from advisor.tracking.opening import Validation, goodput_record, open_loop_run

log = logging.getLogger("advisor")

F = TypeVar("F", bound=Callable[..., Any])
_CURRENT: contextvars.ContextVar[TrackedRun | None] = contextvars.ContextVar(
    "advisor_tracked_run", default=None
)


def current_run() -> TrackedRun | None:
    """The run of the innermost active ``track`` block or ``@tracked`` call, if any."""
    return _CURRENT.get()


class TrackedRun:
    """One custom-loop run; use through :func:`track`. Markers: ``step``, ``epoch``,
    ``validation``."""

    def __init__(
        self,
        batch_size: int | None = None,
        runs_dir: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        tags: dict[str, str] | None = None,
        backend: str | None = None,
        instance_type: str | None = None,
        price_per_hour: float | None = None,
        window_seconds: float = 10.0,
        warmup_steps: int = 5,
        log_every_seconds: float | None = 60.0,
        telemetry: bool = True,
        telemetry_interval_seconds: float = 1.0,
        mlflow: bool = False,
        pricing: Pricing | None = None,
        speed_of_light: bool = True,
        model: Any = None,
        sample: Any = None,
        flops_per_sample: float | None = None,
        **deprecated: Any,
    ) -> None:
        check_names(deprecated, "advisor.track", accepted=TRACK_OPTIONS)
        check_loop_args(batch_size, backend)
        self.flops = FlopSource.of(
            model=model, sample=sample, flops_per_sample=flops_per_sample, batch_size=batch_size
        )
        self.batch_size = batch_size
        self._batch = batch_size or 0  # without a batch size, steps are counted and samples unknown
        self.backend = backend
        # The callback's typed options validate and record the shared settings.
        given = dict(
            runs_dir=runs_dir,
            name=name,
            tags=tags,
            instance_type=instance_type,
            price_per_hour=price_per_hour,
            window_seconds=window_seconds,
            warmup_steps=warmup_steps,
            log_every_seconds=log_every_seconds,
            telemetry=telemetry,
            telemetry_interval_seconds=telemetry_interval_seconds,
            mlflow=mlflow,
            pricing=pricing,
            speed_of_light=speed_of_light,
        )
        given.update(mfu=False, pipeline=False)  # not a loop's: off
        self.options = options_from(given, deprecated, "advisor.track")
        self.writer: Any = None
        self.session: Session | None = None
        self.guard: Guard | None = None
        self._on = False
        self._token: contextvars.Token[TrackedRun | None] | None = None
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._steps = self._samples = 0  # steps and samples since the run began
        self._clock = WindowClock(self.options.window_seconds)  # the window's opening and step ends
        self._win_step0 = self._win_samples0 = 0
        self._epoch, self._epoch_t0 = 0, 0.0
        self._epoch_step0 = self._epoch_samples0 = self._epochs_marked = 0
        self._val_t0: float | None = None
        self._val_seconds = 0.0
        # steps 1..warmup_steps form a window of their own
        self._warmup_end = self.options.warmup_steps
        self._t0 = self._own_seconds = 0.0
        self._own_outside = 0.0  # the advisor's own time between windows (epoch ends)
        self._sampled, self._sampled_seconds = 0, 0.0
        self._log_t, self._log_samples, self._log_seconds = 0.0, 0, 0.0
        # all windows' time: the steps (start-up included) and our work in them
        self._window_seconds = 0.0
        self._val_total = 0.0
        self._first_step_s: float | None = None

    # -- public markers ------------------------------------------------------------------------
    @property
    def run_path(self) -> Any:
        return None if self.writer is None else self.writer.path

    @property
    def run_id(self) -> str | None:
        return None if self.writer is None else self.writer.run_id

    @property
    def steps(self) -> int:
        return self._steps

    def step(self, samples: int | None = None) -> None:
        """One training step has ended; ``samples`` defaults to ``batch_size``."""
        if not self._on:
            return
        now = time.perf_counter()
        n = self._steps + 1
        self._steps = n
        try:  # zero-cost unless it raises (a non-numeric ``samples``): then recording stops
            self._samples += self._batch if samples is None else int(samples)
        except Exception as exc:
            self._fail("step", exc)
            return
        self._clock.stamps.append(now)
        if n > self._warmup_end:
            if self._clock.due(now):
                self._close_window(now)
            elif n & 127 == 0:  # time one call in 128: the advisor's own cost per step
                self._sampled += 1
                self._sampled_seconds += time.perf_counter() - now
        elif n == self._warmup_end:  # warm-up (compilation, caches) ends: its window closes
            self._close_window(now)

    def epoch(self) -> None:
        """The current epoch has ended (training and any validation); the next one begins."""
        if not self._on:
            return
        try:
            self._end_validation()
            self._close_window(time.perf_counter(), force=True)
            t0 = time.perf_counter()
            self._write_epoch()
            self._write_goodput(final=False)
            self._epochs_marked += 1
            self._epoch += 1
            self._call("on_epoch_end", self._epoch - 1, {})
            self.writer.sync()
            # the next epoch's first step is timed from here: the epoch-end work (records,
            # the memory reading, the flush) is the advisor's, between windows
            now = time.perf_counter()
            self._own_outside += now - t0
            self._start_epoch(now)
        except Exception as exc:
            self._fail("epoch", exc)

    def validation(self) -> Validation:
        """Validation begins: ``with run.validation(): ...``; without ``with``, it ends at the
        next marker."""
        if self._on:
            try:
                self._close_window(time.perf_counter(), force=True)
                self._val_t0 = time.perf_counter()
                self._call("on_test_begin")
            except Exception as exc:
                self._fail("validation", exc)
        return Validation(self)

    # -- context manager -----------------------------------------------------------------------
    def __enter__(self) -> TrackedRun:
        self._token = _CURRENT.set(self)
        try:
            self._begin()
        except Exception as exc:
            log.warning(
                "advisor: could not start the run (%s: %s); training goes on without it",
                type(exc).__name__,
                exc,
            )
            self._on = False
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None
        self.close(
            "failed" if exc_type is not None else "finished",
            None if exc_type is None else f"training raised {exc_type.__name__}: {exc}",
        )

    def close(self, status: str = "finished", reason: str | None = None) -> None:
        """End the run (``__exit__`` does this); safe to call twice."""
        if self.writer is None or self.writer.closed:
            return
        try:
            if self._on:
                self._end_validation()
                self._close_window(time.perf_counter(), force=True)
                if self._epochs_marked == 0 and self._steps > 0:
                    self._write_epoch()  # a loop without epoch markers is one epoch
            if reason and self.session is not None:
                self.session.event("advisor", reason, level="error")
            t0 = time.perf_counter()
            self._call("on_train_end")  # the speed of light's count and microbenchmark: ours
            self._own_outside += time.perf_counter() - t0
            self._write_goodput(final=True)
            own = self._own_estimate() + self._own_outside
            self.writer.close(
                status, advisor_seconds=own, train_seconds=time.perf_counter() - self._t0
            )
            self._call("on_run_closed", status)
        except Exception as exc:
            log.warning("advisor: could not close the run: %s", exc)
        self._on = False
        if status == "finished" and self.session is not None and self.session.rank == 0:
            report_closed(self.writer, self.writer.path)

    # -- internals -----------------------------------------------------------------------------
    def _begin(self) -> None:
        self.writer, self.session, self.guard = open_loop_run(
            self.options, self.batch_size, self.backend, self.flops
        )
        self._reset_counters()
        self.session.notes.loop_phase = self._phase
        now = time.perf_counter()
        self._t0 = self._log_t = now
        self._start_epoch(now)
        self._on = True
        if self.session.rank == 0 and self.options.log_every_seconds is not None:
            ensure_log_handler()
        self._call("on_train_begin")
        self._call("on_epoch_begin", 0)

    def _phase(self) -> str:
        """The budget phase the loop is in now (compile events are charged to it)."""
        if self._steps == 0:
            return "startup"
        return "validation" if self._val_t0 is not None else "train_steps"

    def _start_epoch(self, now: float) -> None:
        self._epoch_t0 = now
        self._epoch_step0, self._epoch_samples0 = self._steps, self._samples
        self._val_seconds = 0.0
        self._start_window(now)

    def _start_window(self, now: float) -> None:
        self._win_step0, self._win_samples0 = self._steps, self._samples
        self._clock.open(now)

    def _close_window(self, now: float, force: bool = False) -> None:
        """Write the window that ends now (if it holds steps) and start the next one."""
        t0 = time.perf_counter()
        try:
            steps = self._steps - self._win_step0
            if steps > 0:
                warmup = self._steps <= self._warmup_end
                if self._win_step0 == 0:
                    self._first_step_s = self._clock.stamps[1] - self._t0
                    self.writer.write(FirstStepRecord(t=time.time(), seconds=self._first_step_s))
                samples = self._samples - self._win_samples0
                record = WindowRecord(
                    t=time.time(),
                    epoch=self._epoch,
                    seconds=now - self._clock.t0,
                    steps=steps,
                    samples=samples if self.batch_size is not None or samples else None,
                    step_begin=self._win_step0,
                    step_end=self._steps,
                    warmup=warmup,
                    **interval_stats(self._clock.stamps, 1, time.time() - time.perf_counter()),
                )
                self.writer.write(record)
                if not warmup:
                    self._log_samples += samples
                    self._log_seconds += record.seconds
                    self._maybe_log()
            elif not force:
                return
            self._window_seconds += now - self._clock.t0
            self._start_window(now)
        except Exception as exc:
            self._fail("window", exc)
        self._own_seconds += time.perf_counter() - t0

    def _write_epoch(self) -> None:
        seconds = time.perf_counter() - self._epoch_t0
        samples = self._samples - self._epoch_samples0
        self.writer.write(
            EpochRecord(
                t=time.time(),
                epoch=self._epoch,
                seconds=seconds,
                train_seconds=seconds - self._val_seconds,
                val_seconds=self._val_seconds,
                steps=self._steps - self._epoch_step0,
                samples=samples if self.batch_size is not None or samples else None,
            )
        )

    def _own_estimate(self) -> float:
        return self._own_seconds + (
            self._sampled_seconds / self._sampled * self._steps if self._sampled else 0.0
        )  # inside the windows (the epoch ends' is ``_own_outside``)

    def _write_goodput(self, final: bool) -> None:
        """Where the loop's time went, as its markers tell (:func:`goodput_record`)."""
        wall = time.perf_counter() - self._t0
        own = self._own_estimate()
        window, first, validation = self._window_seconds, self._first_step_s, self._val_total
        spent = self.session.notes.compile_seconds if self.session else {}
        self.writer.write(
            goodput_record(
                final, wall, own, window, first, validation, self._steps, spent, self._own_outside
            )
        )

    def _end_validation(self) -> None:
        if self._val_t0 is None:
            return
        now = time.perf_counter()
        self._val_seconds += now - self._val_t0
        self._val_total += now - self._val_t0
        self._val_t0 = None
        self._start_window(now)
        self._call("on_test_end")

    def _maybe_log(self) -> None:
        every = self.options.log_every_seconds
        now = time.perf_counter()
        if every is None or self._log_seconds <= 0 or now - self._log_t < every:
            return
        self._log_t = now
        assert self.session is not None
        rate = self._log_samples / self._log_seconds * max(1, self.session.num_workers)
        price = self.session.price_per_hour
        log.info(rate_line(rate, price))

    def _call(self, hook: str, *args: Any) -> None:
        if self.guard is not None:
            self.guard.call(hook, *args)

    def _fail(self, where: str, exc: Exception) -> None:
        """Log once, record the event, stop recording; the loop goes on."""
        self._on = False
        message = f"custom-loop tracking failed in {where}: {type(exc).__name__}: {exc}"
        log.warning("advisor: %s; recording stops, training goes on", message)
        try:
            if self.session is not None:
                self.session.event("track", message, level="error")
        except Exception:
            pass


# What ``advisor.track`` accepts: a subset of the callback's options, plus the loop's own.
TRACK_OPTIONS = tuple(
    p for p in inspect.signature(TrackedRun.__init__).parameters if p not in ("self", "deprecated")
)
