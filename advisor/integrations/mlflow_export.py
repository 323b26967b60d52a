"""``advisor export RUN --to mlflow``: a run's metrics, report and plots into an MLflow run.

Which MLflow run: ``mlflow_run`` when given; else the one the run was trained in (recorded by
``AdvisorCallback(mlflow=True)``); else a new run named after the advisor run, in ``experiment``
(default: MLflow's default experiment). What is logged:

- the window series (``advisor.samples_per_s``… see :mod:`advisor.integrations.mlflow_metrics`),
  unless the MLflow run already has it (logged during training) or ``series=False``;
- summary metrics ``advisor.<fact>`` (throughput, samples/$, utilization, energy, epoch time with
  the first epoch out, goodput…) and the number of findings per status;
- the run's settings as params (``advisor.strategy``, ``advisor.batch_size``… see
  :func:`advisor.integrations.mlflow_metrics.run_params`), those the MLflow run does not have yet;
- artifacts under ``advisor/``: ``report.json`` (the versioned report), ``report.txt``, the epoch
  plot and, for a run of a sweep, the scaling plots (``plots/*.png``, with matplotlib), and the run
  directory's manifest and record files (``run/``), from which the run can be diagnosed again.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError, one_line
from advisor.integrations.mlflow_metrics import run_params

if TYPE_CHECKING:
    from advisor.service import Analysis, RunService

SUMMARY_FACTS = (
    "throughput.samples_per_s",
    "throughput.samples_per_s.p50",
    "throughput.steps_per_s",
    "cost.samples_per_dollar",
    "cost.usd_per_epoch",
    "time.epoch_s.mean",
    "time.first_step_s",
    "time.val_fraction",
    "gpu.util.mean",
    "gpu.util.p95",
    "host.cpu.mean",
    "energy.wh",
    "energy.j_per_sample",
    "input.share",
    "trace.communication_percent",
    "mfu",
    "advisor.overhead_fraction",
    "goodput",
)


class MlflowExportError(AdvisorError):
    """MLflow is missing, or the tracking store refused what was logged."""


@dataclass
class ExportResult:
    mlflow_run_id: str
    tracking_uri: str
    created: bool  # a new MLflow run was made for the export
    metrics: int = 0
    artifacts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def export_run(
    store: RunService,
    ref: Any,
    *,
    mlflow_run: str | None = None,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    series: bool = True,
    plots: bool = True,
    config: Any = None,
    rules_dir: Any = None,
) -> ExportResult:
    """Log run ``ref`` of ``store`` into MLflow (see the module docs); returns what was logged."""
    try:
        import mlflow
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise MlflowExportError(
            "MLflow is not installed: pip install 'keras-advisor[mlflow]'"
        ) from None

    analysis = store.analyse(ref)
    report = store.diagnose(ref, config, rules_dir=rules_dir)
    uri = tracking_uri or mlflow.get_tracking_uri()
    client = MlflowClient(tracking_uri=uri)
    run_id = mlflow_run or _recorded_run(analysis, uri)
    created = run_id is None
    try:
        if run_id is None:
            experiment_id = _experiment_id(client, experiment)
            run_id = client.create_run(
                experiment_id, run_name=analysis.run_id, tags={"advisor.run_id": analysis.run_id}
            ).info.run_id
        result = ExportResult(run_id, uri, created)
        metrics = _metrics(client, run_id, analysis, report, series)
        for i in range(0, len(metrics), 1000):  # MLflow takes at most 1000 metrics a batch
            client.log_batch(run_id, metrics=metrics[i : i + 1000], synchronous=True)
        result.metrics = len(metrics)
        client.set_tag(run_id, "advisor.run_id", analysis.run_id)
        manifest = analysis.run.manifest
        logged = client.get_run(run_id).data.params
        params = run_params(analysis.facts, workers=manifest.num_workers, tags=manifest.tags)
        new = [
            Param(k, v) for k, v in params.items() if k not in logged
        ]  # an MLflow param is written once
        if new:
            client.log_batch(run_id, params=new, synchronous=True)
        top = report.failures[0].code if report.failures else "none"
        client.set_tag(run_id, "advisor.top_finding", top)
        _log_artifacts(client, run_id, store, analysis, report, plots, result)
        if created:
            client.set_terminated(
                run_id, "FINISHED" if analysis.run.status == "finished" else "FAILED"
            )
    except AdvisorError:
        raise
    except Exception as exc:  # the tracking store's own errors, in one line
        raise MlflowExportError(f"MLflow at {uri}: {one_line(exc)}") from None
    return result


def _metrics(client: Any, run_id: str, analysis: Analysis, report: Any, series: bool) -> list[Any]:
    """What is logged as metrics: the series (unless the run has them already), the summary
    facts and the finding counts."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    last_step = _last_step(analysis)
    metrics: list[Any] = []
    if series and not client.get_metric_history(run_id, "advisor.samples_per_s"):
        for point in _series(analysis):
            metrics += [
                Metric(k, float(v), point.timestamp_ms, point.step)
                for k, v in point.keyed().items()
            ]
    for name in SUMMARY_FACTS:
        value = analysis.facts.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            key = name if name.startswith("advisor.") else f"advisor.{name}"
            metrics.append(Metric(key, float(value), now, last_step))
    counts = report.summary
    for status, count in (
        ("fail", counts.fail),
        ("pass", counts.passed),
        ("unknown", counts.unknown),
    ):
        metrics.append(Metric(f"advisor.findings.{status}", float(count), now, last_step))
    return metrics


def _log_artifacts(
    client: Any,
    run_id: str,
    store: RunService,
    analysis: Analysis,
    report: Any,
    plots: bool,
    result: ExportResult,
) -> None:
    """The report (JSON and text), the run's records and its plots, under ``advisor/``."""
    from advisor.render import render

    with tempfile.TemporaryDirectory(prefix="advisor-mlflow-") as tmp:
        folder = Path(tmp) / "advisor"
        (folder / "run").mkdir(parents=True)
        (folder / "report.json").write_text(render(report, "json"), encoding="utf-8")
        (folder / "report.txt").write_text(render(report, "text"), encoding="utf-8")
        for f in sorted(Path(analysis.run.path).iterdir()):
            if f.is_file() and (f.name == "run.json" or f.name.endswith(".jsonl")):
                (folder / "run" / f.name).write_bytes(f.read_bytes())
        if plots:
            result.notes += _plots(store, analysis, folder / "plots")
        client.log_artifacts(run_id, str(folder), artifact_path="advisor")
        result.artifacts = sorted(
            str(p.relative_to(Path(tmp))) for p in folder.rglob("*") if p.is_file()
        )


def _recorded_run(analysis: Analysis, uri: str) -> str | None:
    """The MLflow run the advisor run was trained in, when it was logged to this tracking URI."""
    from advisor.store.schema import ContextRecord

    for record in analysis.run.of_type(ContextRecord):
        run_id = record.values.get("mlflow.run_id")
        if run_id and record.values.get("mlflow.tracking_uri") in (None, uri):
            return str(run_id)
    return None


def _experiment_id(client: Any, name: str | None) -> str:
    if name is None:
        return os.environ.get("MLFLOW_EXPERIMENT_ID") or "0"
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))


def _series(analysis: Analysis) -> list[Any]:
    """The chief's windows, scaled to the job as ``throughput.samples_per_s.p50`` is."""
    from advisor.analysis.scaling_points import counts_global_batch
    from advisor.integrations.mlflow_metrics import series_of

    run = analysis.run
    chief = run.ranks[0] if run.ranks else 0
    scale = 1 if counts_global_batch(run) else max(1, len(run.ranks))
    return series_of(run.records.get(chief, []), scale, analysis.facts.get("cost.price_per_hour"))


def _last_step(analysis: Analysis) -> int:
    from advisor.store.schema import WindowRecord

    windows = (
        analysis.run.of_type(WindowRecord, rank=analysis.run.ranks[0]) if analysis.run.ranks else []
    )
    return max((w.step_end for w in windows), default=0)


def _plots(store: RunService, analysis: Analysis, folder: Path) -> list[str]:
    """The epoch plot, and the scaling plots when the run belongs to a sweep (needs matplotlib)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return ["no plots: matplotlib is not installed (pip install 'keras-advisor[report]')"]
    from advisor.render.plots import write_plots
    from advisor.render.run_plots import write_run_plots

    notes: list[str] = []
    folder.mkdir(parents=True, exist_ok=True)
    write_run_plots(analysis.overview(), folder)
    sweep = analysis.run.manifest.sweep_id
    if sweep:
        try:
            _, more = write_plots(store.scaling_table(sweep), folder)
            notes += more
        except AdvisorError as exc:
            notes.append(f"no scaling plots: {exc}")
    return notes
