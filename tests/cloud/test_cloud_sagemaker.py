"""``advisor import sagemaker`` against moto's SageMaker and CloudWatch: the job's description and
its system metrics become a run that ``advisor check`` diagnoses (S302 decided both ways)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from aws_server import assert_no_secrets
from click.testing import CliRunner

from advisor.cli.main import cli

boto3 = pytest.importorskip("boto3")

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:2.16-gpu-py310"


def create_job(
    name: str,
    mode: str,
    instance: str = "ml.g5.12xlarge",
    count: int = 2,
    channel_mode: str | None = None,
):
    sm = boto3.client("sagemaker")
    channel = {
        "ChannelName": "train",
        "DataSource": {
            "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data-bucket/train/"}
        },
    }
    if channel_mode:
        channel["InputMode"] = channel_mode
    sm.create_training_job(
        TrainingJobName=name,
        RoleArn=ROLE,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": mode},
        InputDataConfig=[channel],
        OutputDataConfig={"S3OutputPath": "s3://data-bucket/out"},
        ResourceConfig={"InstanceType": instance, "InstanceCount": count, "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )
    return sm.describe_training_job(TrainingJobName=name)


def put_system_metrics(
    job: str, per_host: list[tuple[float, float, float]], points: int = 10
) -> None:
    """What SageMaker publishes for each host: GPU and CPU utilization summed over the instance's
    GPUs / vCPUs, and memory, per minute. Each host's values are constant here, so the one-minute
    averages CloudWatch returns do not depend on where the minute boundaries fall."""
    cw = boto3.client("cloudwatch")
    now = datetime.now(timezone.utc).timestamp()
    for host, (gpu, cpu, mem) in enumerate(per_host, start=1):
        dims = [{"Name": "Host", "Value": f"{job}/algo-{host}"}]
        data = []
        for i in range(points):
            stamp = datetime.fromtimestamp(now - 50 + 5 * i, tz=timezone.utc)
            data += [
                {
                    "MetricName": "GPUUtilization",
                    "Dimensions": dims,
                    "Timestamp": stamp,
                    "Value": gpu,
                },
                {
                    "MetricName": "CPUUtilization",
                    "Dimensions": dims,
                    "Timestamp": stamp,
                    "Value": cpu,
                },
                {
                    "MetricName": "MemoryUtilization",
                    "Dimensions": dims,
                    "Timestamp": stamp,
                    "Value": mem,
                },
            ]
        cw.put_metric_data(Namespace="/aws/sagemaker/TrainingJobs", MetricData=data)


def check_json(runner: CliRunner, run: str, codes: str) -> dict:
    out = runner.invoke(cli, ["check", run, "--select", codes, "--format", "json", "--exit-zero"])
    assert out.exit_code == 0, out.output
    return {f["code"]: f for f in json.loads(out.stdout)["findings"]}


def test_file_mode_job_is_imported_and_fails_s302(aws, runs_dir):
    create_job("resnet-file", "File")
    # ml.g5.12xlarge: 4 GPUs, 48 vCPUs; SageMaker reports sums (0–400 %, 0–4800 %)
    put_system_metrics("resnet-file", [(140.0, 2400.0, 30.0), (140.0, 1200.0, 55.0)])
    runner = CliRunner()
    out = runner.invoke(cli, ["import", "sagemaker", "resnet-file"])
    assert out.exit_code == 0, out.output
    assert "imported resnet-file as run sagemaker-resnet-file" in out.stdout
    facts = json.loads(
        runner.invoke(cli, ["show", "sagemaker-resnet-file", "--format", "json"]).stdout
    )
    m, f = facts["manifest"], facts["facts"]
    assert (
        m["instance_type"] == "ml.g5.12xlarge"
        and m["num_workers"] == 2
        and m["status"] == "finished"
    )
    assert (
        m["framework"]["backend"] == "tensorflow" and m["framework"]["tensorflow_version"] == "2.16"
    )
    assert m["price_per_hour"] is None  # SageMaker prices are not in the EC2 table
    assert f["cloud.input_mode"] == "File" and f["cloud.input_mode_source"] == "sagemaker-job"
    assert f["gpu.count"] == 8 and f["gpu.util.p95"] == pytest.approx(35.0)  # 140 % over 4 GPUs
    assert f["gpu.util.mean"] == pytest.approx(35.0)
    assert f["host.cpu.mean"] == pytest.approx(37.5)  # 2400 % and 1200 % over 48 vCPUs
    assert f["host.mem.peak_fraction"] == pytest.approx(0.55)
    assert f["instance.gpus"] == 4  # the hardware of ml.g5.12xlarge is that of g5.12xlarge
    findings = check_json(runner, "sagemaker-resnet-file", "S302,M106")
    assert findings["S302"]["status"] == "fail" and "input mode File" in findings["S302"]["message"]
    assert findings["M106"]["status"] == "fail"  # 35 % GPU utilization, from the imported metrics
    again = runner.invoke(cli, ["import", "sagemaker", "resnet-file"])
    assert again.exit_code == 2 and "imported already" in again.output
    assert_no_secrets(runs_dir, out.output)


def test_fastfile_channel_passes_s302_into_an_s3_store(aws, tmp_path):
    boto3.client("s3").create_bucket(Bucket="runs-bucket")
    create_job(
        "bert-fastfile", "File", instance="ml.p4d.24xlarge", count=1, channel_mode="FastFile"
    )
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "--runs-dir",
            "s3://runs-bucket/advisor",
            "import",
            "sagemaker",
            "bert-fastfile",
            "--price-per-hour",
            "37.69",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "no system metrics" in out.output  # nothing was published for this job
    keys = {o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="runs-bucket")["Contents"]}
    assert "advisor/sagemaker-bert-fastfile/run.json" in keys
    findings = check_json(runner, "s3://runs-bucket/advisor/sagemaker-bert-fastfile", "S302,M102")
    assert findings["S302"]["status"] == "pass" and "FastFile" in findings["S302"]["message"]
    assert_no_secrets(Path(os.environ["ADVISOR_CACHE_DIR"]), out.output)


def test_missing_job_is_one_line(aws):
    out = CliRunner().invoke(cli, ["import", "sagemaker", "no-such-job"])
    assert out.exit_code == 2
    (line,) = out.output.strip().splitlines()
    assert line.startswith("advisor: error: SageMaker training job 'no-such-job' in us-east-1:")
