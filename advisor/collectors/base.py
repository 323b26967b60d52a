"""Collector protocol, the training session they share, and the guard that keeps them harmless.

A collector is a plain object with any of the hook methods below. ``AdvisorCallback`` calls them
from Keras; each call goes through the guard: the first exception is logged once, recorded as an
``event`` in the run, and switches that collector off. Nothing reaches ``fit()``.

Hot path: only the batch hooks run every step. Collectors that need ``on_train_batch_end`` set
``batch_hook = True`` (``batch_begin_hook = True`` for ``on_train_batch_begin``) and must keep it
to a clock read and a counter bump (or return at once outside their window).

On JAX and torch, Keras may run ``on_train_batch_end`` on a worker thread (asynchronous callback
dispatch) when every callback of the fit says it is ``async_safe``. ``AdvisorCallback`` says so
when all its collectors with a batch-end hook set ``async_safe = True``: such a hook must be safe
to run off the training thread, concurrently with the next step and with other calls of itself
(no reading model state, no opening per-thread contexts). ``on_train_batch_begin`` and every
other hook always run on the training thread.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.collectors.ledger import Ledger
    from advisor.collectors.options import AdvisorOptions
    from advisor.experiments.baseline import InputBaseline
    from advisor.experiments.whatif import WhatIfResult
    from advisor.store.schema import WindowRecord
    from advisor.store.writer import RunWriter

log = logging.getLogger("advisor")

HOOKS = (
    "on_train_begin",
    "on_epoch_begin",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_begin",
    "on_test_end",
    "on_epoch_end",
    "on_train_end",
    "on_before_close",
    "on_run_closed",
)


@dataclass
class DataInfo:
    """What the advisor learned about the training input at train begin."""

    kind: str | None = None  # tf.data | numpy | generator | pydataset | torch | unknown
    batch_size: int | None = None  # global batch of a full batch
    num_batches: int | None = None  # batches per epoch when finite and known
    partial_batch_size: int | None = None  # size of the last batch when smaller, else None
    dataset: Any = None  # the tf.data.Dataset when the input is one (for inspection, baselines)
    adapter: Any = None  # the Keras data adapter (Keras 3) or data handler (tf_keras)
    steps_per_epoch: int | None = None  # what the fit loop will run per epoch, when known

    def short_by(self, epoch_steps: int) -> int:
        """Samples the last batch lacks, once an epoch has run ``epoch_steps`` through the whole
        input (known length only); else 0."""
        batch, partial, batches = self.batch_size, self.partial_batch_size, self.num_batches
        if not (batch and partial and batches) or epoch_steps < batches:
            return 0
        whole_input = self.steps_per_epoch is None or self.steps_per_epoch >= batches
        return batch - partial if whole_input else 0


def agreed_samples(steps: int, batch: int, seen: int | None) -> int | None:
    """The loss tracker's sample count ``seen`` over ``steps`` when it agrees with them (every
    step a whole batch but perhaps the last), else None (a custom ``train_step`` leaves it 0)."""
    if seen is not None and steps > 0 and (steps - 1) * batch < seen <= steps * batch:
        return seen
    return None


@dataclass
class EpochTally:
    """One epoch's training part, counted once when it ends (before validation)."""

    epoch: int
    steps: int | None  # optimizer steps the epoch ran
    samples: int | None  # samples those steps trained on, the short last batch counted as it was


@dataclass
class Notes:
    """What the collectors of one fit leave for each other, typed; each field says who writes it."""

    context: dict[str, Any] = field(
        default_factory=dict
    )  # context (a custom loop: tracking): its record
    graph_retraces: int | None = None  # context: the retrace count it last recorded
    pipeline: dict[str, Any] = field(default_factory=dict)  # pipeline: what the input is
    windows: list[WindowRecord] = field(
        default_factory=list
    )  # throughput: the windows written so far
    logging: bool = False  # throughput: the periodic log line is on
    last_samples_per_s: float | None = None  # throughput: the rate the last log line gave
    profiler_window: tuple[int, int] | None = None  # profiler: the steps it profiles
    first_step_seconds: float | None = (
        None  # epochs: time to the first step (compiling), the baseline's left out
    )
    baseline: InputBaseline | None = None  # baseline: what it measured
    baseline_seconds: float = 0.0  # baseline: how long it trained (not the user's training)
    whatif: WhatIfResult | None = None  # whatif: what it measured
    whatif_seconds: float = 0.0  # whatif: how long it trained (not the user's training)
    slow_batch_hooks: list[tuple[str, Any]] = field(
        default_factory=list
    )  # budget: ("Class.hook", the hook)
    own_batch_seconds: float = (
        0.0  # the callback: its batch hooks' sampled cost so far (budget reads it)
    )
    horovod_size: int | None = (
        None  # set by tests and launchers that know Horovod's world before it starts
    )

    @property
    def measuring_seconds(self) -> float:
        """Seconds the advisor's own experiments trained the model during this fit."""
        return self.baseline_seconds + self.whatif_seconds


@dataclass
class Session:
    """Shared state of one ``fit`` for all collectors of one callback."""

    writer: RunWriter
    model: Any
    rank: int = 0
    num_workers: int = 1
    options: AdvisorOptions = field(default_factory=lambda: _default_options())
    data: DataInfo = field(default_factory=DataInfo)
    fit_callbacks: list[Any] = field(default_factory=list)
    keras_flavor: str = "keras3"  # keras3 | tf_keras
    backend: str | None = None
    steps_per_execution: int = 1
    train_begin_t: float = 0.0  # perf_counter at on_train_begin
    price_per_hour: float | None = None
    notes: Notes = field(default_factory=Notes)  # what collectors leave for each other
    # Epoch accounting, kept by the callback: optimizer steps at the epoch's begin and the
    # finished epoch's tally.
    epoch_step0: int | None = None
    tally: EpochTally | None = None
    ledger: Ledger | None = (
        None  # the fit's time budget (collectors/ledger.py), kept by the callback
    )

    def iterations(self) -> int | None:
        """Optimizer steps so far (``optimizer.iterations``). Read at boundaries only."""
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:  # Keras 3 on JAX keeps state off the variables mid-epoch
            try:
                sync()
            except Exception:
                pass
        optimizer = getattr(self.model, "optimizer", None)
        var = getattr(optimizer, "iterations", None)
        if var is None or self._read_is_collective(var):
            return None
        try:
            value = var.numpy() if hasattr(var, "numpy") else var
            return int(value)
        except Exception:
            try:
                import keras

                return int(keras.ops.convert_to_numpy(var))
            except Exception:
                return None

    def _read_is_collective(self, var: Any) -> bool:
        """Reading ``var`` would all-reduce it across workers: a sync-on-read variable (a metric's
        count) under a strategy that spans several workers. The advisor reads at moments of its
        own (a window's time is up), which differ between workers; a collective issued on one
        worker and not the other pairs with training's next collective and breaks it ("Collective
        instance N expected data_type 9 but got data_type 1"). Such values are not read."""
        inner = getattr(
            var, "value", None
        )  # a Keras 3 variable's TensorFlow one (tf's own: a method)
        synchronization = getattr(
            var if inner is None or callable(inner) else inner, "synchronization", None
        )
        if synchronization is None or getattr(synchronization, "name", "") != "ON_READ":
            return False
        strategy = getattr(self.model, "distribute_strategy", None)
        name = type(strategy).__name__ if strategy is not None else ""
        return any(kind in name for kind in ("MultiWorker", "Collective", "ParameterServer"))

    def samples_seen(self) -> int | None:
        """Samples the epoch's training steps have seen so far, from the loss tracker's count.

        Keras weighs the loss mean of every training step by the batch's first dimension, so the
        tracker's count is the epoch's samples (short last batch included) until validation
        resets it. Keras 3: ``model._loss_tracker``; tf_keras: the compiled loss's total mean.
        None where neither exists (a custom ``train_step`` may leave it at zero: callers check)."""
        tracker = getattr(self.model, "_loss_tracker", None)
        if tracker is None:
            tracker = getattr(getattr(self.model, "compiled_loss", None), "_total_loss_mean", None)
        count = getattr(tracker, "count", None)
        if count is None or self._read_is_collective(count):
            return None
        try:
            value = count.numpy() if hasattr(count, "numpy") else count
            return int(round(float(value)))
        except Exception:
            return None

    def close_epoch(self, epoch: int, last_batch_ended: int | None) -> EpochTally | None:
        """Count the epoch's training part once: at validation's begin, else at the epoch's end.

        Steps: the optimizer's count since the epoch began, capped by the batches ended. On an
        input of unknown length Keras 3 on TensorFlow counts the step that found the input's
        end as an optimizer step and begins a batch for it (steps_per_execution 1), while with
        steps_per_execution > 1 the last batch's index assumes a whole last execution; each
        count is right where the other is not. (The batch index is used on TensorFlow only: on
        JAX and torch Keras may still be running batch-end hooks on its worker threads when
        validation begins, and there the optimizer's count is exact.)
        Samples: the loss tracker's count where it agrees with the steps (it is the only count
        that knows the short last batch of an input of unknown length), else steps × batch less
        the known short batch. None if counting failed (it never costs the training job)."""
        if self.tally is not None and self.tally.epoch == epoch:
            return self.tally
        try:
            counts = []
            if last_batch_ended is not None and self.backend == "tensorflow":
                counts.append(last_batch_ended + 1)
            now = self.iterations()
            if now is not None and self.epoch_step0 is not None and now >= self.epoch_step0:
                counts.append(now - self.epoch_step0)
            steps = min(counts) if counts else None
            batch = self.data.batch_size
            samples = None
            if steps is not None and batch:
                samples = agreed_samples(steps, batch, self.samples_seen())
                if samples is None:
                    samples = steps * batch - self.data.short_by(steps)
        except Exception as exc:
            log.debug("advisor: epoch tally failed (%s: %s)", type(exc).__name__, exc)
            return None
        self.tally = EpochTally(epoch=epoch, steps=steps, samples=samples)
        return self.tally

    def event(
        self, source: str, message: str, level: str = "info", detail: str | None = None
    ) -> None:
        from advisor.store.schema import EventRecord

        self.writer.write(
            EventRecord(t=time.time(), level=level, source=source, message=message, detail=detail)  # type: ignore[arg-type]
        )


def _default_options() -> AdvisorOptions:
    from advisor.collectors.options import AdvisorOptions

    return AdvisorOptions()


class Collector:
    """Base class: override the hooks you need. ``name`` identifies it in events and config."""

    name = "collector"
    batch_hook = False
    batch_begin_hook = False
    async_safe = False  # the batch-end hook may run off the training thread (see the module docs)

    def __init__(self) -> None:
        self._session: Session | None = None

    def attach(self, session: Session) -> None:
        self._session = session

    @property
    def attached(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> Session:
        """The fit this collector records (set by ``attach`` when the fit begins)."""
        if self._session is None:
            raise RuntimeError(f"{self.name} collector used before attach()")
        return self._session

    def on_train_begin(self) -> None: ...

    def on_epoch_begin(self, epoch: int) -> None: ...

    def on_train_batch_begin(self, batch: int) -> None: ...

    def on_train_batch_end(self, batch: int) -> None: ...

    def on_test_begin(self) -> None: ...

    def on_test_end(self) -> None: ...

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None: ...

    def on_train_end(self) -> None: ...

    def on_before_close(self, status: str) -> None:
        """Just before the run's end record: every other hook of the fit has run (rank 0 and others)."""

    def on_run_closed(self, status: str) -> None:
        """After the run directory is complete (end record written, manifest final); rank 0 and others."""


class Guard:
    """Calls collector hooks; a collector whose hook raises is logged once and switched off."""

    def __init__(self, collectors: list[Collector], session: Session | None = None) -> None:
        self.collectors = list(collectors)
        self.session = session
        self.disabled: dict[str, str] = {}

    def call(self, hook: str, *args: Any) -> None:
        ledger = self.session.ledger if self.session is not None else None
        for collector in self.collectors:
            if collector.name in self.disabled:
                continue
            if ledger is not None:  # each collector's time is its own in the fit's budget
                ledger.enter(f"advisor:{collector.name}")
            try:
                getattr(collector, hook)(*args)
            except Exception as exc:
                self.fail(collector, hook, exc)
            finally:
                if ledger is not None:
                    ledger.leave()

    def fail(self, collector: Collector, hook: str, exc: BaseException) -> None:
        from advisor.store.redact import redact_text

        # training logs are shared too (CI output, a cluster's job log): no secret from the message
        message = redact_text(
            f"{collector.name} collector failed in {hook}: {type(exc).__name__}: {exc}"
        )
        self.disabled[collector.name] = message
        log.warning("advisor: %s; it is switched off, training goes on", message)
        if self.session is not None:
            try:
                detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
                self.session.event(collector.name, message, level="error", detail=detail)
            except Exception:
                pass

    def active(self, hook_attr: str | None = None) -> list[Collector]:
        return [
            c
            for c in self.collectors
            if c.name not in self.disabled and (hook_attr is None or getattr(c, hook_attr, False))
        ]
