"""A SageMaker training job as a run: ``describe_training_job`` plus its CloudWatch system metrics.

Jobs that never ran the advisor's callback can still be diagnosed on what SageMaker knows: the
instance type and count, start and end, the input mode of each data channel (checklist S302),
and the per-minute system metrics SageMaker publishes in ``/aws/sagemaker/TrainingJobs``
(``Host=<job>/algo-<n>``). The run itself is written by :mod:`advisor.service.sagemaker`.

IAM: ``sagemaker:DescribeTrainingJob`` and ``cloudwatch:GetMetricData``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from advisor.cloud.aws import client, cloud_error, region_name

NAMESPACE = "/aws/sagemaker/TrainingJobs"
SYSTEM_METRICS = (
    "CPUUtilization",
    "MemoryUtilization",
    "GPUUtilization",
    "GPUMemoryUtilization",
    "DiskUtilization",
)
PERIOD_S = 60
STATUS = {
    "Completed": "finished",
    "Failed": "failed",
    "Stopped": "failed",
    "InProgress": "running",
    "Stopping": "running",
}
TRAIN_CHANNELS = ("train", "training")


@dataclass
class SageMakerJob:
    """What the import learned about one training job."""

    name: str
    arn: str | None
    status: str  # Completed | Failed | Stopped | InProgress | Stopping
    instance_type: str | None
    instance_count: int
    created: float
    started: float | None
    ended: float | None
    training_seconds: float | None
    billable_seconds: float | None
    image: str | None
    region: str
    channels: dict[str, str] = field(default_factory=dict)  # channel → input mode
    input_mode: str | None = None
    managed_spot: bool = False
    failure_reason: str | None = None
    metrics: dict[str, list[float]] = field(default_factory=dict)  # metric → values of every host
    notes: list[str] = field(default_factory=list)


def _ts(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def input_modes(description: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """Channel → mode (a channel's own InputMode wins over the job's TrainingInputMode), and the
    mode of the training data: the ``train`` channel's, else File when any channel copies."""
    default = (description.get("AlgorithmSpecification") or {}).get("TrainingInputMode")
    channels: dict[str, str] = {}
    for channel in description.get("InputDataConfig") or []:
        mode = channel.get("InputMode") or default
        if "FileSystemDataSource" in (channel.get("DataSource") or {}):
            mode = "FileSystem"  # EFS / FSx for Lustre: mounted, read while training
        if mode:
            channels[str(channel.get("ChannelName", "?"))] = str(mode)
    for name in TRAIN_CHANNELS:
        if name in channels:
            return channels, channels[name]
    if "File" in channels.values():
        return channels, "File"
    return channels, next(iter(channels.values()), default)


def from_description(description: dict[str, Any], region: str) -> SageMakerJob:
    resources = description.get("ResourceConfig") or {}
    channels, mode = input_modes(description)
    instance_type = resources.get("InstanceType")
    count = int(resources.get("InstanceCount") or 1)
    groups = resources.get("InstanceGroups") or []
    if not instance_type and groups:  # heterogeneous clusters: the first group
        instance_type = groups[0].get("InstanceType")
        count = sum(int(g.get("InstanceCount") or 0) for g in groups) or 1
    return SageMakerJob(
        name=str(description["TrainingJobName"]),
        arn=description.get("TrainingJobArn"),
        status=str(description.get("TrainingJobStatus", "Completed")),
        instance_type=instance_type,
        instance_count=count,
        created=_ts(description.get("CreationTime")) or time.time(),
        started=_ts(description.get("TrainingStartTime")),
        ended=_ts(description.get("TrainingEndTime")),
        training_seconds=_ts(description.get("TrainingTimeInSeconds")),
        billable_seconds=_ts(description.get("BillableTimeInSeconds")),
        image=(description.get("AlgorithmSpecification") or {}).get("TrainingImage"),
        region=region,
        channels=channels,
        input_mode=mode,
        managed_spot=bool(description.get("EnableManagedSpotTraining")),
        failure_reason=description.get("FailureReason"),
    )


def fetch_job(
    job_name: str,
    region: str | None = None,
    *,
    metrics: bool = True,
    sm: Any = None,
    cloudwatch: Any = None,
) -> SageMakerJob:
    """Describe the job and read its system metrics (a missing job or permission: one line)."""
    region = region_name(region)
    sm = sm or client("sagemaker", region)
    try:
        description = sm.describe_training_job(TrainingJobName=job_name)
    except Exception as exc:
        raise cloud_error(
            exc, f"SageMaker training job {job_name!r} in {region}", "sagemaker:DescribeTrainingJob"
        ) from None
    job = from_description(description, region)
    if metrics:
        try:
            job.metrics = system_metrics(job, cloudwatch or client("cloudwatch", region))
        except Exception as exc:
            job.notes.append(
                str(cloud_error(exc, "CloudWatch metrics", "cloudwatch:GetMetricData"))
            )
        if not job.metrics:
            job.notes.append(f"no system metrics in CloudWatch {NAMESPACE} for this job")
    return job


def system_metrics(job: SageMakerJob, cloudwatch: Any) -> dict[str, list[float]]:
    """One-minute averages of the system metrics of every host of the job, by metric name."""
    start = (job.started or job.created) - PERIOD_S
    end = (job.ended or time.time()) + PERIOD_S
    queries = []
    for host in range(1, job.instance_count + 1):
        for i, metric in enumerate(SYSTEM_METRICS):
            queries.append(
                {
                    "Id": f"m{host}_{i}",
                    "Label": metric,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": NAMESPACE,
                            "MetricName": metric,
                            "Dimensions": [{"Name": "Host", "Value": f"{job.name}/algo-{host}"}],
                        },
                        "Period": PERIOD_S,
                        "Stat": "Average",
                    },
                    "ReturnData": True,
                }
            )
    out: dict[str, list[float]] = {}
    for chunk in range(0, len(queries), 500):
        kwargs: dict[str, Any] = {
            "MetricDataQueries": queries[chunk : chunk + 500],
            "StartTime": datetime.fromtimestamp(start, tz=timezone.utc),
            "EndTime": datetime.fromtimestamp(end, tz=timezone.utc) + timedelta(seconds=1),
        }
        while True:
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page.get("MetricDataResults") or []:
                metric = SYSTEM_METRICS[int(result["Id"].rsplit("_", 1)[1])]
                out.setdefault(metric, []).extend(float(v) for v in result.get("Values") or [])
            token = page.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
    return {k: v for k, v in out.items() if v}


def framework_of(image: str | None) -> dict[str, Any]:
    """Backend and version from a Deep Learning Container image name (best effort)."""
    if not image:
        return {}
    match = re.search(
        r"/(tensorflow|pytorch|huggingface-pytorch|huggingface-tensorflow|mxnet)[-\w]*:(\d+\.\d+)",
        image,
    )
    if not match:
        return {}
    kind, version = match.group(1), match.group(2)
    if "tensorflow" in kind:
        return {"backend": "tensorflow", "tensorflow_version": version, "backend_version": version}
    if "pytorch" in kind:
        return {"backend": "torch", "backend_version": version}
    return {}


def run_id_for(job_name: str) -> str:
    return ("sagemaker-" + re.sub(r"[^A-Za-z0-9._-]", "-", job_name))[:128]
