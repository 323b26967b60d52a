"""Cloud work through the service: data checks (and attaching them to runs), SageMaker job
imports and late uploads of spooled runs. The AWS calls themselves live in :mod:`advisor.cloud`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding
    from advisor.probes.datacheck import DataSummary, Progress
    from advisor.service.run_service import RunService

DATA_RULES = (
    "S301",
    "S305",
)  # the rules a data check can decide on its own (or say what is missing)


def check_data(
    path: str,
    *,
    limit: int | None = None,
    sample: int | None = None,
    progress: Progress | None = None,
) -> DataSummary:
    """The data check of a local folder or file, or of ``s3://bucket/prefix``."""
    from advisor.probes.datacheck import MAX_OBJECTS, SNIFF_SAMPLE, check_local

    limit = limit or MAX_OBJECTS
    sample = sample or SNIFF_SAMPLE
    if path.startswith("s3://"):
        from advisor.cloud.s3data import check_s3

        return check_s3(path, sample=sample, limit=limit, progress=progress)
    if "://" in path:
        raise UsageError(f"{path}: only local folders and s3://bucket/prefix can be checked")
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file or folder")
    summary = check_local(path, sample=sample, limit=limit, progress=progress)
    if not summary.objects:
        raise UsageError(f"{path}: no data files there (hidden files are skipped)")
    return summary


def data_findings(summary: DataSummary) -> list[Finding]:
    """S301 and S305 evaluated on the data check's facts alone (unknown says what else to
    measure)."""
    from advisor.diagnosis import evaluate, load_rules

    facts = summary.facts()
    return [
        evaluate(rule, facts, min_measured_steps=0)
        for rule in load_rules()
        if rule.code in DATA_RULES
    ]


def attach_data(store: RunService, summary: DataSummary, into: str) -> Path:
    """Record the data check in an ended run (a ``facts`` record, source ``data``); upload it back
    when the run lives in S3. Returns the run's folder."""
    from advisor.errors import RunFormatError
    from advisor.store.append import append_record
    from advisor.store.schema import FactsRecord

    run = store.read(into)
    if run.status == "running":
        raise RunFormatError(
            f"{run.path}: the run is still being written; attach the data check when it has ended"
        )
    values: dict[str, Any] = dict(summary.facts())
    values["summary"] = summary.to_dict()
    append_record(
        run.path,
        FactsRecord(t=time.time(), source="data", values=values),
        rank=run.ranks[0] if run.ranks else 0,
    )
    store.push(run.path)
    return Path(run.path)


def import_sagemaker(
    store: RunService,
    job_name: str,
    region: str | None = None,
    *,
    metrics: bool = True,
    name: str | None = None,
    price_per_hour: float | None = None,
    live_price: bool = False,
) -> tuple[Path, list[str]]:
    """A run made from a SageMaker training job (its description and CloudWatch metrics)."""
    from advisor.cloud.sagemaker import fetch_job
    from advisor.service.sagemaker import write_run

    job = fetch_job(job_name, region, metrics=metrics)
    path = write_run(
        job, store.root, name=name, price_per_hour=price_per_hour, live_price=live_price
    )
    store.push(path)
    return path, job.notes


def upload_spooled(url: str) -> list[tuple[str, int, bool, Path]]:
    """Send the runs waiting in the spool of ``url``: (run id, files sent, spool removed,
    folder)."""
    from advisor.cloud.spool import upload_pending

    return [(p.state.run_id, sent, removed, p.folder) for p, sent, removed in upload_pending(url)]
