"""AdvisorCallback: the one callback users add to ``model.fit``; it runs the collectors.

    model.fit(ds, epochs=3, callbacks=[advisor.AdvisorCallback(instance_type="g5.xlarge")])

Each ``fit`` call becomes one run in the store. Collectors are guarded: a failing collector is
logged once, recorded in the run, and switched off; ``fit`` never sees an exception from here.

The class speaks both callback protocols — Keras 3's and legacy tf_keras's (Keras 2, which
multi-worker and Horovod jobs still use) — without inheriting from either, so it imports no Keras
itself and the same user code works under ``TF_USE_LEGACY_KERAS=1``. Which Keras is training is
read from the model's class when ``fit`` begins.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from advisor.collectors.collector import Collector, Guard
from advisor.collectors.fitinfo import find_fit_locals
from advisor.collectors.keras_protocol import KerasCallbackProtocol
from advisor.collectors.ledger import ADVISOR, BOUNDARY, STARTUP, TRAIN, VALIDATION
from advisor.collectors.lifecycle import RunLifecycle
from advisor.collectors.options import (
    BASELINE_MAX_SECONDS,
    BASELINE_MIN_STEPS,
    BASELINE_ROUNDS,
    WHATIF_ROUNDS,
    AdvisorOptions,
    Baseline,
    Pricing,
    TelemetryDevices,
    WhatIf,
    check_names,
    takes_options,
)
from advisor.collectors.session import Session

log = logging.getLogger("advisor")


class AdvisorCallback(RunLifecycle, KerasCallbackProtocol):
    """Measure a training run and write it to the run store.

    Args:
        runs_dir: the store (default ``$ADVISOR_RUNS_DIR`` or ``./advisor-runs``).
        name: a human name that becomes part of the run id.
        tags: free-form labels stored in the manifest.
        instance_type: cloud instance type, e.g. ``g5.xlarge`` (also ``$ADVISOR_INSTANCE_TYPE``;
            found from the machine's DMI data on AWS when not given).
        price_per_hour: USD per hour per instance; overrides the embedded price table.
        pricing: ``"table"`` or ``"aws"`` (the AWS price, cached; at most 3 s, else the table);
            None: ``$ADVISOR_PRICING``, else ``"table"``.
        spot: price the instance at the current spot price (with ``pricing="aws"``).
        region: AWS region of the instance for prices (default: boto3's region).
        instance_metadata: ask the cloud metadata service for the instance type (≤ 0.5 s).
        window_seconds: length of a throughput window in seconds.
        warmup_steps: steps excluded from throughput summaries (tracing, compilation, caches).
        log_every_seconds: period of the one-line samples/s log (0: every window; None: no log).
        collectors: names or instances to run instead of the defaults.
        baseline: ``"auto"`` (default): measure the cached-input baseline after the last epoch,
            sized by time and capped at a small share of the fit, or skip it with the reason
            recorded where it cannot run; ``"end"`` or ``"start"``: measure it then, uncapped; True:
            ``"auto"`` (as for ``whatif``); None or False: off.
        baseline_steps: measured steps per arm of the baseline, at least.
        baseline_seconds: measured time of the whole baseline (all arms and rounds); None: about 2 s
            or 200 steps, whichever is longer, with ``"auto"``, 3 s with ``"end"``/``"start"``.
        baseline_rounds: interleaved rounds (real and cached input alternate; each figure gets a
            noise band from the rounds' spread).
        baseline_max_seconds: the baseline stops within this allowance.
        baseline_source_cache: also measure with a cache right after the file source.
        profile_steps: ``(start, stop)``: profile these training steps (1-based, inclusive);
            ``"auto"``: 25 steps from a few steps after the warm-up.
        profile_summary: summarise the profile with XProf at train end.
        profile_timeout_seconds: seconds the summary may take (None: ``$ADVISOR_TRACE_TIMEOUT_S``,
            else 120).
        telemetry: sample GPU (NVML) and host (psutil) metrics.
        telemetry_interval_seconds: seconds between telemetry samples.
        telemetry_devices: ``"mine"`` (this process's GPUs) or ``"all"``.
        mfu: estimate FLOPs and MFU (None: when a GPU is present).
        pipeline: inspect the tf.data pipeline and its files at train begin.
        memory: record memory per epoch; warn during the fit when it grows toward running out.
        batch_memory: after the last epoch, measure peak memory at the batch, 2× and 4× it and
            predict the largest batch that fits (docs/memory.md).
        goodput: account for the fit's wall clock (goodput): time the hooks of the fit's other
            callbacks and the model's saves, by wrapping them for the fit's duration only, and count
            the backend's compile events (docs/goodput.md). False: only the advisor's own phases are
            timed.
        whatif: ``"needed"`` (default): after training, when what it measured points to a change the
            what-if can try (the input costs 10% of step time or more, a step under 5 ms, a step run
            eagerly) and the defaults' share of the fit (a tenth of a fit of a minute or more, the
            baseline included) leaves it 3 s, try the changes ``"auto"`` would, on a single worker;
            ``"auto"``: always try the changes the model and input point to; or a list of candidate
            names (``parallel_map``, ``cache_map``, ``jit_compile``, ``steps_per_execution_8``,
            ``batch_x2``…). Each change is tried on this model and input beside the unchanged
            configuration and its measured gain is recorded (None: off); ``"backends"`` in the list:
            every Keras backend × jit_compile in fresh processes. True: ``"auto"``. See
            docs/whatif.md.
        whatif_max_seconds: the what-if's whole allowance (None: the smaller of 10% of the fit and
            60 s).
        whatif_rounds: interleaved rounds of the what-if (each gain's band comes from them).
        whatif_seconds: measure the rounds for about this long in all, then stop (None: use what the
            allowance leaves after preparing); ``whatif_max_seconds`` still caps it all.
        speed_of_light: at train end, measure what this device sustains (matmul FLOP/s per dtype,
            memory bandwidth; under a second, cached per host, device and framework in the store)
            and the model's FLOPs per sample, for the fraction of speed of light. See
            docs/speed-of-light.md.
        cloudwatch_namespace: publish samples/s, samples/$ and utilization to CloudWatch.
        mlflow: log samples/s, samples/$, utilization and energy to the active MLflow run at every
            window end (off the training thread), and the report and plots at the end.

    ``runs_dir="s3://bucket/prefix"`` writes a local spool, uploaded in the background
    (docs/cloud.md).

    A misspelled option raises ``TypeError`` naming the closest valid one; a bad value raises
    :class:`~advisor.errors.UsageError`. The options are recorded in ``run.json``. Durations end
    in ``_seconds``; ``window_s``, ``log_every_s``, ``telemetry_interval_s`` and
    ``profile_timeout_s`` still work, with a DeprecationWarning, and so does ``budget``, the old
    name of ``goodput``. Where settings come from: an argument you pass, then its environment
    variable (``$ADVISOR_RUNS_DIR``, ``$ADVISOR_INSTANCE_TYPE``, ``$ADVISOR_INSTANCE_METADATA``,
    ``$ADVISOR_PRICING``, ``$ADVISOR_TRACE_TIMEOUT_S``), then the default. Each option is
    declared once, beside its collector (``advisor.collectors.option_registry``); the Args above
    are generated from those declarations (``python -m advisor.collectors.option_docs``).
    """

    # the goodput collector counts these hooks as the advisor's, not a user callback's
    _advisor_own = True

    def __new__(cls, *args: Any, **kwargs: Any) -> AdvisorCallback:
        check_names(kwargs, cls.__name__)
        return super().__new__(cls)

    @takes_options  # the arguments become self.options, each through its declaration
    def __init__(
        self,
        runs_dir: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        tags: dict[str, str] | None = None,
        instance_type: str | None = None,
        price_per_hour: float | None = None,
        pricing: Pricing | None = None,
        spot: bool = False,
        region: str | None = None,
        instance_metadata: bool | None = None,
        window_seconds: float = 10.0,
        warmup_steps: int = 5,
        log_every_seconds: float | None = 60.0,
        collectors: Sequence[str | Collector] | None = None,
        baseline: Baseline = "auto",
        baseline_steps: int = BASELINE_MIN_STEPS,
        baseline_seconds: float | None = None,
        baseline_rounds: int = BASELINE_ROUNDS,
        baseline_max_seconds: float = BASELINE_MAX_SECONDS,
        baseline_source_cache: bool = True,
        profile_steps: tuple[int, int] | str | int | None = None,
        profile_summary: bool = True,
        profile_timeout_seconds: float | None = None,
        telemetry: bool = True,
        telemetry_interval_seconds: float = 1.0,
        telemetry_devices: TelemetryDevices = "mine",
        mfu: bool | None = None,
        pipeline: bool = True,
        memory: bool = True,
        batch_memory: bool = False,
        goodput: bool = True,
        whatif: WhatIf = "needed",
        whatif_max_seconds: float | None = None,
        whatif_rounds: int = WHATIF_ROUNDS,
        whatif_seconds: float | None = None,
        speed_of_light: bool = True,
        cloudwatch_namespace: str | None = None,
        mlflow: bool = False,
        **deprecated: Any,
    ) -> None:
        self.options: AdvisorOptions  # set by takes_options, from these arguments
        from advisor.collectors.registry import build_collectors

        self.collectors: list[Collector] = build_collectors(self.options)
        self.session: Session | None = None
        self.guard: Guard | None = None
        self.writer: Any = None
        self._batch_calls: list[Any] = []
        self._batch_begin_calls: list[Any] = []
        self._own_seconds = 0.0
        self._batch_sampled = 0
        self._batch_sampled_seconds = 0.0
        self._batches = 0
        self._epoch: int | None = None
        self._last_batch_ended: int | None = None  # index of the epoch's last batch ended
        self._train_t0 = 0.0
        # the batch whose begin ends start-up or an epoch boundary (training steps resume)
        self._switch_at = 2
        self._in_fit = False
        self._collectors_used = False
        self.uploader: Any = None  # RunUploader when runs_dir is an s3:// store

    @property
    def async_safe(self) -> bool:
        """Keras 3 on JAX and torch may run our batch-end hook on a worker thread when True.

        True when every collector with a batch-end hook allows it (throughput and epochs do; the
        profiler does not: its step markers must open and close on the training thread). Keras
        reads this when ``fit`` builds its callback list, before ``on_train_begin``.
        """
        return all(
            getattr(c, "async_safe", False)
            for c in self.collectors
            if getattr(type(c), "batch_hook", False) or getattr(c, "batch_hook", False)
        )

    @property
    def run_path(self) -> Any:
        return None if self.writer is None else self.writer.path

    # -- Keras hooks ---------------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        t0 = time.perf_counter()
        if self._in_fit:  # a previous fit raised: its run failed
            self._abort("training raised an exception")
        try:
            self._begin(find_fit_locals(), t0)
        except Exception as exc:
            log.warning(
                "advisor: could not start the run (%s: %s); training goes on without it",
                type(exc).__name__,
                exc,
            )
            self.guard = None
            return
        assert self.guard is not None and self.session is not None
        self.guard.call("on_train_begin")
        if self.session.ledger is not None:
            self.session.ledger.phase(STARTUP)
        self._own_seconds += time.perf_counter() - t0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.session is not None and self.guard is not None:
            self._epoch = epoch
            self.session.epoch_step0 = self.session.iterations()
            self._last_batch_ended = None
            ledger = self.session.ledger
            if ledger is not None and ledger.current_phase != STARTUP:
                ledger.phase(BOUNDARY)
                self._switch_at = self._batches + 1  # the epoch's first step begins training again
        self._call("on_epoch_begin", epoch)

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        # Always on the training thread: the call count is exact here.
        n = self._batches + 1
        self._batches = n
        if n == self._switch_at:  # start-up (the first step) or an epoch boundary has ended
            self._phase(TRAIN)
        if n & 127 == 0:  # time one call in 128 to estimate our own cost
            t0 = time.perf_counter()
            self._run_batch_begin_hooks(batch)
            self._batch_sampled += 1
            self._batch_sampled_seconds += time.perf_counter() - t0
        else:
            self._run_batch_begin_hooks(batch)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        # May run on a Keras worker thread (async dispatch on JAX / torch): no shared counters here.
        # The index is only stored; it is read on TensorFlow only, where hooks run in order.
        self._last_batch_ended = batch
        if self._batches & 127 == 0:
            t0 = time.perf_counter()
            self._run_batch_hooks(batch)
            self._batch_sampled_seconds += time.perf_counter() - t0
        else:
            self._run_batch_hooks(batch)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._in_fit:
            self._close_epoch(self._epoch)  # before validation resets the training metrics
            self._phase(VALIDATION)
            self._call("on_test_begin")

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._in_fit:
            self._call("on_test_end")
            self._phase(BOUNDARY)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # Records reach the OS as they are written (a killed process loses nothing); the fsync
        # against a machine crash happens at close, not every epoch.
        self._close_epoch(epoch)
        self._phase(BOUNDARY)
        if self.session is not None:
            self.session.notes.own_batch_seconds = self._own_batch_estimate()
        self._call("on_epoch_end", epoch, dict(logs or {}))
        if self.uploader is not None:
            self.uploader.request()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._call("on_train_end")
        self._finish("finished")

    # -- internals -----------------------------------------------------------------------------
    def _phase(self, phase: str) -> None:
        if self.session is not None and self.session.ledger is not None:
            self.session.ledger.phase(phase)

    def _close_epoch(self, epoch: int | None) -> None:
        """The epoch's tally (``Session.close_epoch``), once, before the collectors' hooks."""
        if self.session is not None and self.guard is not None and epoch is not None:
            self.session.close_epoch(epoch, self._last_batch_ended)

    def _run_batch_begin_hooks(self, batch: int) -> None:
        for call in self._batch_begin_calls:
            try:
                call(batch)
            except Exception as exc:
                self._batch_failure(call, exc, "on_train_batch_begin")

    def _run_batch_hooks(self, batch: int) -> None:
        for call in self._batch_calls:
            try:
                call(batch)
            except Exception as exc:
                self._batch_failure(call, exc)

    def _batch_failure(self, call: Any, exc: Exception, hook: str = "on_train_batch_end") -> None:
        collector = call.__self__
        assert self.guard is not None
        self.guard.fail(collector, hook, exc)
        self._refresh_batch_calls()

    def _refresh_batch_calls(self) -> None:
        assert self.guard is not None
        self._batch_calls = [c.on_train_batch_end for c in self.guard.active("batch_hook")]
        self._batch_begin_calls = [
            c.on_train_batch_begin for c in self.guard.active("batch_begin_hook")
        ]

    def _call(self, hook: str, *args: Any) -> None:
        if self.guard is None:
            return
        t0 = time.perf_counter()
        ledger = self.session.ledger if self.session is not None else None
        if ledger is not None:
            ledger.enter(ADVISOR)
        try:
            self.guard.call(hook, *args)
            self._refresh_batch_calls()
        finally:
            if ledger is not None:
                ledger.leave()
        self._own_seconds += time.perf_counter() - t0
