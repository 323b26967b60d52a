"""The state one ``fit`` shares with all collectors of one callback: the session, what the
collectors leave for each other (:class:`Notes`), and what the advisor learned of the input."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from advisor.collectors.ledger import Ledger
    from advisor.experiments.baseline import InputBaseline
    from advisor.experiments.whatif import WhatIfResult
    from advisor.store.schema import WindowRecord
    from advisor.store.writer import RunWriter

log = logging.getLogger("advisor")


class FitOptions(Protocol):
    """What collectors read of the fit's options through the session (``AdvisorOptions`` has
    them). A protocol, not the options class: the options are assembled from every collector's
    declarations, so the session they all share cannot depend on them."""

    @property
    def warmup_steps(self) -> int: ...

    @property
    def profile_steps(self) -> tuple[int, int] | str | None: ...

    @property
    def mlflow(self) -> bool: ...


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
    speed_of_light_fraction: float | None = None  # speed_of_light: training's rough fraction
    slow_batch_hooks: list[tuple[str, Any]] = field(
        default_factory=list
    )  # budget: ("Class.hook", the hook)
    own_batch_seconds: float = (
        0.0  # the callback: its batch hooks' sampled cost so far (budget reads it)
    )
    # compile: seconds of compile events by the budget phase they ran in (goodput moves them)
    compile_seconds: dict[str, float] = field(default_factory=dict)
    # compile: (perf_counter at its end, seconds) of recent compile events (throughput reads it)
    compile_spans: list[tuple[float, float]] = field(default_factory=list)
    # goodput: (perf_counter at its end, seconds) of recent full garbage collections (same use)
    gc_spans: list[tuple[float, float]] = field(default_factory=list)
    # a custom loop (tracking): the budget phase it is in now, for the compile events
    loop_phase: Callable[[], str] | None = None
    # goodput (when memory is on): the memory grown across each callback's hooks, sampled, and
    # model.predict/evaluate calls made inside a hook (memory reads them for its suspect)
    hook_memory: Any = None
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
    options: FitOptions  # the callback's (or the loop's) AdvisorOptions
    rank: int = 0
    num_workers: int = 1
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
    # the fit's time accounting (goodput; collectors/ledger.py), kept by the callback
    ledger: Ledger | None = None

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
