"""``advisor import sagemaker``: a SageMaker training job written as a run directory.

SageMaker sums utilization over an instance's GPUs and vCPUs (0–100 × count); the import divides
by the counts from the instance table, so ``gpu.util.*`` and ``host.cpu.*`` mean what they mean
for our own runs (at one-minute resolution). Facts that need per-core or per-GPU series (a
saturated core, load imbalance) stay unknown rather than guessed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from advisor.cloud.sagemaker import STATUS, SageMakerJob, framework_of, run_id_for
from advisor.errors import UsageError
from advisor.stats import percentile


def facts_of(job: SageMakerJob) -> dict[str, Any]:
    """Facts of the job: input mode, and utilization normalised to one GPU / one vCPU."""
    from advisor.reference.prices import lookup

    out: dict[str, Any] = {}
    if job.input_mode:
        out["cloud.input_mode"] = job.input_mode
        out["cloud.input_mode_source"] = "sagemaker-job"
    row = lookup(job.instance_type) if job.instance_type else None
    gpu = job.metrics.get("GPUUtilization")
    if row is not None and row.gpus and gpu:
        util = np.asarray(gpu) / row.gpus
        out.update(
            {
                "gpu.present": True,
                "gpu.count": row.gpus * job.instance_count,
                "gpu.util.p5": _p(util, 5),
                "gpu.util.p50": _p(util, 50),
                "gpu.util.p95": _p(util, 95),
                "gpu.util.mean": float(util.mean()),
            }
        )
        out["gpu.util.fluctuating"] = out["gpu.util.p95"] > 70 and out["gpu.util.p5"] < 10
        mem = job.metrics.get("GPUMemoryUtilization")
        if mem:
            out["gpu.mem.used_fraction.p95"] = _p(np.asarray(mem) / row.gpus / 100.0, 95)
    elif gpu and row is None:
        job.notes.append(
            f"{job.instance_type}: GPU count unknown, GPU utilization not normalised (left out)"
        )
    cpu = job.metrics.get("CPUUtilization")
    if row is not None and cpu:
        per_core = np.asarray(cpu) / row.vcpus
        out.update({"host.cpu.mean": float(per_core.mean()), "host.cpu.p95": _p(per_core, 95)})
    memory = job.metrics.get("MemoryUtilization")
    if memory:
        out["host.mem.peak_fraction"] = max(memory) / 100.0
    return out


def _p(values: Any, q: float) -> float:
    return round(percentile(values, q), 3)


def write_run(
    job: SageMakerJob,
    runs_root: Path,
    *,
    name: str | None = None,
    price_per_hour: float | None = None,
    live_price: bool = False,
) -> Path:
    """Write the job as a run directory under ``runs_root``; refuses to overwrite an earlier
    import."""
    from advisor.reference.prices import resolve
    from advisor.store.schema import EventRecord, FactsRecord
    from advisor.store.writer import RunWriter

    run_id = run_id_for(job.name)
    if STATUS.get(job.status) == "running":
        raise UsageError(f"job {job.name} is {job.status}: import it when it has ended")
    if (runs_root / run_id).exists():
        raise UsageError(
            f"{runs_root / run_id}: job {job.name} was imported already (delete that run to import "
            "again)"
        )
    price = resolve(
        job.instance_type, price_per_hour, live=live_price, region=job.region, spot=job.managed_spot
    )
    if price.note:
        job.notes.append(f"price: {price.note}")
    started = job.started or job.created
    manifest = {
        "created": started,
        "name": name or job.name,
        "instance_type": job.instance_type,
        "instance_source": "sagemaker",
        "num_workers": job.instance_count,
        "price_per_hour": price.usd_per_hour,
        "price_source": price.source,
        "framework": framework_of(job.image),
        "tags": {
            k: v
            for k, v in {
                "source": "sagemaker-import",
                "sagemaker.job": job.name,
                "sagemaker.status": job.status,
                "sagemaker.region": job.region,
                "sagemaker.managed_spot": str(job.managed_spot).lower(),
            }.items()
            if v
        },
        "config": {
            "imported_from": "sagemaker",
            "channels": job.channels,
            "billable_seconds": job.billable_seconds,
            "image": job.image,
        },
    }
    writer = RunWriter(runs_root, run_id, manifest=manifest)
    now = time.time()
    writer.write(FactsRecord(t=now, source="sagemaker", values=facts_of(job)))
    if job.failure_reason:
        writer.write(
            EventRecord(t=now, level="error", source="sagemaker", message=job.failure_reason)
        )
    for note in job.notes:
        writer.write(EventRecord(t=now, level="info", source="sagemaker", message=note))
    status = STATUS.get(job.status, "finished")
    train_s = (
        job.training_seconds
        if job.training_seconds is not None
        else ((job.ended - started) if job.ended else None)
    )
    writer.close("failed" if status == "failed" else "finished", train_seconds=train_s)
    if job.ended:
        writer.update_manifest(ended=job.ended)
    return writer.path
