"""MLflow: log the advisor's measurements into the active MLflow run while training.

``AdvisorCallback(mlflow=True)`` (or ``advisor.track(..., mlflow=True)``) on the chief, inside
``with mlflow.start_run():``. At train begin the collector notes the active run and its tracking
URI (on the training thread: MLflow's active run is per thread) and listens to the run writer; a
thread of its own turns each finished window into ``advisor.*`` metrics
(:mod:`advisor.integrations.mlflow_metrics`) and logs them with ``MlflowClient.log_batch``. The
training thread only puts records on a queue.

The run's settings (batch size, strategy, backend, dtype policy, ``steps_per_execution``, XLA,
workers) are logged once as MLflow params named ``advisor.*``.

When the run directory is complete, the report and the plots are made by ``advisor export RUN
--to mlflow`` in a child process (the analysis half never runs inside the training process: it
reads the finished run directory, like every other reader), bounded by a timeout. ``fit`` does
not wait for it: a thread follows the child, and the interpreter waits for that thread at exit
(``export_thread``). Any failure is logged once and recorded; ``fit`` goes on.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.collectors.option_spec import Option
from advisor.integrations.mlflow_metrics import MetricSeries, run_params
from advisor.store.schema import ContextRecord, GpuSample, HostSample, Record, WindowRecord

log = logging.getLogger("advisor")

OPTIONS = (
    Option(
        "mlflow",
        "bool",
        False,
        "log samples/s, samples/$, utilization and energy to the active MLflow run at every "
        "window end (off the training thread), and the report and plots at the end.",
    ),
)
EXPORT_TIMEOUT_S = 120.0  # $ADVISOR_MLFLOW_EXPORT_TIMEOUT_S overrides
JOIN_TIMEOUT_S = 10.0
FLUSH_S = 5.0  # the logging thread writes what it holds at most this often (one log_batch)
BATCH_LIMIT = 1000  # metrics per log_batch (MLflow's own limit)
_STOP = object()
# MLflow param name → the context fact it comes from (context.<key>)


class MlflowCollector(Collector):
    name = "mlflow"

    def __init__(self, window_s: float = 10.0, export: bool = True) -> None:
        super().__init__()
        self.window_s = window_s
        self.export = export
        self.run_id: str | None = None
        self.tracking_uri: str | None = None
        self.logged = 0  # metric values logged
        self.error: str | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self.export_thread: threading.Thread | None = (
            None  # the end-of-run export, running beside the script
        )

    def on_train_begin(self) -> None:
        if self.session.rank != 0:  # the chief logs for the job
            return
        # A run can only be active where the user imported MLflow: never import it here (slow).
        mlflow = sys.modules.get("mlflow")
        active = mlflow.active_run() if mlflow is not None else None
        if mlflow is None or active is None:
            self._note(
                "warning",
                "mlflow=True but no MLflow run is active: wrap training in "
                "`with mlflow.start_run():` (or export later: advisor export RUN --to mlflow)",
            )
            return
        self.run_id = active.info.run_id
        self.tracking_uri = mlflow.get_tracking_uri()
        self.session.writer.write(
            ContextRecord(
                t=time.time(),
                values={"mlflow.run_id": self.run_id, "mlflow.tracking_uri": self.tracking_uri},
            )
        )
        # The chief's samples → the job's: each process feeds its own share (Horovod, JAX
        # multi-process, custom loops) unless tf.distribute gives every worker the global batch.
        context = self.session.notes.context
        global_batch, local_batch = (
            context.get("context.global_batch_size"),
            self.session.data.batch_size,
        )
        scale = global_batch / local_batch if global_batch and local_batch else 1.0
        series = MetricSeries(scale, self.session.price_per_hour)
        self._thread = threading.Thread(
            target=self._run, args=(series,), name="advisor-mlflow", daemon=True
        )
        self._thread.start()
        self.session.writer.add_listener(self._listen)

    def _listen(self, record: Record) -> None:
        if isinstance(record, (WindowRecord, GpuSample, HostSample)):
            self._queue.put(record)

    def _run(self, series: MetricSeries) -> None:
        """The logging thread: windows → metrics → ``log_batch``; the first failure stops it."""
        try:
            from mlflow.entities import Metric
            from mlflow.tracking import MlflowClient

            self._client = MlflowClient(tracking_uri=self.tracking_uri)
            self._client.set_tag(self.run_id, "advisor.run_id", self.session.writer.run_id)
            self._log_params()
            # Points are gathered and written together every FLUSH_S: a store's write (SQLAlchemy,
            # a transaction) costs tens of ms of this thread's CPU and GIL, which a fit of short
            # epochs paid at every window (a 20 s fit of 0.3 s epochs ran ~19% slower on 2 cores).
            pending: list[Any] = []
            last = time.monotonic()
            while True:
                wait = max(0.0, last + FLUSH_S - time.monotonic()) if pending else None
                try:
                    record = self._queue.get(timeout=wait)
                except queue.Empty:
                    record = None
                if record is not None and record is not _STOP:
                    point = series.add(record)
                    if point is not None:
                        pending += [
                            Metric(k, float(v), point.timestamp_ms, point.step)
                            for k, v in point.keyed().items()
                        ]
                if pending and (record is _STOP or time.monotonic() - last >= FLUSH_S):
                    for start in range(0, len(pending), BATCH_LIMIT):
                        self._client.log_batch(
                            self.run_id,
                            metrics=pending[start : start + BATCH_LIMIT],
                            synchronous=True,
                        )
                    self.logged += len(pending)
                    pending, last = [], time.monotonic()
                if record is _STOP:
                    return
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self._note(
                "warning",
                f"logging to MLflow failed ({self.error}); it is switched off, training goes on",
            )

    def on_train_end(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            self.session.writer.remove_listener(self._listen)
        except ValueError:
            pass
        self._queue.put(_STOP)
        thread.join(JOIN_TIMEOUT_S)
        if thread.is_alive():
            self._note(
                "warning",
                f"MLflow logging did not finish within {JOIN_TIMEOUT_S:.0f} s; "
                "later windows are not in MLflow",
            )

    def _log_params(self) -> None:
        """The run's settings as MLflow params (``advisor.*``); a clash with a param the user
        logged under the same name is a note, never a failure of the series."""
        from mlflow.entities import Param

        manifest = self.session.writer.manifest
        params = run_params(
            self.session.notes.context,
            workers=self.session.num_workers,
            tags=manifest.tags if manifest else None,
            backend=self.session.backend,
        )
        batch = [Param(k, v) for k, v in params.items()]
        try:
            self._client.log_batch(self.run_id, params=batch, synchronous=True)
        except Exception as exc:
            self._note("info", f"MLflow params not logged ({type(exc).__name__}: {str(exc)[:200]})")

    def on_run_closed(self, status: str) -> None:
        """The report and plots, by ``advisor export --to mlflow`` in a child process that the
        fit does not wait for (a non-daemon thread follows it: the interpreter waits at exit)."""
        if not self.export or self.run_id is None:
            return
        self.export_thread = threading.Thread(
            target=self._export, name="advisor-mlflow-export", daemon=False
        )
        self.export_thread.start()

    def _export(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "--runs-dir",
            str(self.session.writer.runs_dir),
            "export",
            str(self.session.writer.run_id),
            "--to",
            "mlflow",
            "--mlflow-run",
            str(self.run_id),
            "--tracking-uri",
            str(self.tracking_uri),
            "--no-series",
        ]
        timeout = float(os.environ.get("ADVISOR_MLFLOW_EXPORT_TIMEOUT_S", EXPORT_TIMEOUT_S))
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            log.warning(
                "advisor: the MLflow export of the report took over %.0f s and was stopped", timeout
            )
            return
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            log.warning("advisor: the MLflow export of the report failed: %s", last)

    def _note(self, level: str, message: str) -> None:
        log.warning("advisor: %s", message)
        try:
            self.session.event(self.name, message, level=level)
        except Exception:
            pass
