"""The run's life inside ``AdvisorCallback``: opening it when a fit begins, closing it when the
fit ends (or fails), with the advisor's own time estimated for the end record.

A mixin of :class:`~advisor.collectors.callback.AdvisorCallback`, which holds the state these
methods read (its ``__init__`` sets it); the Keras hooks that call them live there.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from advisor.collectors.collector import Collector, Guard
from advisor.collectors.opening import OPEN_RUNS, SIGTERM, report_closed
from advisor.collectors.windows import ensure_log_handler

if TYPE_CHECKING:
    from advisor.collectors.options import AdvisorOptions
    from advisor.collectors.session import Session

log = logging.getLogger("advisor")


class RunLifecycle:
    """Opens and closes the run of each fit (see the module docs)."""

    options: AdvisorOptions
    collectors: list[Collector]
    session: Session | None
    guard: Guard | None
    writer: Any
    uploader: Any
    model: Any
    _own_seconds: float
    _batch_sampled: int
    _batch_sampled_seconds: float
    _batches: int
    _switch_at: int
    _train_t0: float
    _in_fit: bool
    _collectors_used: bool

    def _refresh_batch_calls(self) -> None:
        raise NotImplementedError

    def _begin(self, fit_locals: dict[str, Any] | None, t0: float) -> None:
        from advisor.collectors.opening import open_run
        from advisor.collectors.registry import build_collectors

        opts = self.options
        self.writer, self.session, url, found = open_run(opts, fit_locals, self.model, t0)
        rank = self.session.rank
        # Every fit starts fresh collectors (and a new run); the first uses those made in __init__.
        if self._collectors_used:
            self.collectors = build_collectors(opts)
        self._collectors_used = True
        for collector in self.collectors:
            collector.attach(self.session)
        self.guard = Guard(self.collectors, self.session)
        self._refresh_batch_calls()
        self._batches = self._batch_sampled = 0
        self._switch_at = 2
        self._batch_sampled_seconds = self._own_seconds = 0.0
        self._train_t0 = time.perf_counter()
        self._in_fit = True
        OPEN_RUNS.add(self)
        SIGTERM.install()  # preemption closes the run as terminated (collectors/preemption.py)
        if found.note:
            log.warning("advisor: price: %s", found.note)
            self.session.event("prices", found.note, level="warning")
        if url is not None:
            from advisor.cloud.spool import start_upload

            session = self.session
            self.uploader = start_upload(
                url,
                self.writer.path,
                self.writer.run_id,
                rank,
                note=lambda message: session.event("upload", message, level="warning"),
            )
        if rank == 0 and opts.log_every_seconds is not None:
            ensure_log_handler()

    def _own_batch_estimate(self) -> float:
        """Seconds spent in the advisor's batch hooks so far, from the one call in 128 it times."""
        per_batch = (
            self._batch_sampled_seconds / self._batch_sampled if self._batch_sampled else 0.0
        )
        return per_batch * self._batches

    def _own_estimate(self) -> float:
        return self._own_seconds + self._own_batch_estimate()

    def _finish(self, status: str, signal: str | None = None) -> None:
        if self.writer is None or self.writer.closed:
            return
        try:
            # A baseline or a what-if trains on purpose: it is neither overhead nor the user's
            # training.
            baseline = self.session.notes.measuring_seconds if self.session else 0.0
            train_seconds = time.perf_counter() - self._train_t0 - baseline
            own = max(0.0, self._own_estimate() - baseline)
            if self.session is not None and self.guard is not None:
                self.session.notes.own_batch_seconds = self._own_batch_estimate()
                self.guard.call(
                    "on_before_close", status
                )  # the budget's final record, before the end record
            ended = {"signal": signal} if signal else {}
            self.writer.close(status, advisor_seconds=own, train_seconds=train_seconds, **ended)
        except Exception as exc:
            log.warning("advisor: could not close the run: %s", exc)
        if self.uploader is not None:
            self.uploader.finish()
        self._in_fit = False
        OPEN_RUNS.discard(self)
        if not OPEN_RUNS:
            SIGTERM.restore()
        if self.guard is not None:
            self.guard.call("on_run_closed", status)
        if self.session is not None and self.session.rank == 0 and status == "finished":
            where = (
                f"{self.uploader.url} (uploading from {self.writer.path})"
                if self.uploader
                else self.writer.path
            )
            report_closed(self.writer, where)

    def _abort(self, reason: str) -> None:
        if self.writer is not None and not self.writer.closed:
            if self.guard is not None:
                self.guard.call("on_train_end")  # stop samplers and profilers
            try:
                self.session.event("advisor", reason, level="error") if self.session else None
            except Exception:
                pass
            self._finish("failed")

    def _terminate(self, signal_name: str) -> None:
        """The process was told to stop (``signal_name``: preempted, evicted, cancelled): what is
        held is written, and the run closed as terminated, with the time, before it ends."""
        if self.writer is None or self.writer.closed:
            return
        if self.guard is not None:
            self.guard.call("on_train_end")  # stop samplers and profilers; their last records
        stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
        try:
            if self.session is not None:
                self.session.event(
                    "advisor",
                    f"terminated by {signal_name} at {stamp} (preempted, evicted or cancelled)",
                    level="warning",
                )
        except Exception:
            pass
        self._finish("terminated", signal=signal_name)
