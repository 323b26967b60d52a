"""The S3 run store end to end against a real moto server: train into ``s3://``, upload from the
spool, read back with every command; an outage mid-training; a spool left behind and sent later."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from aws_server import MotoServer, assert_no_secrets, point_at
from click.testing import CliRunner

from advisor.cli.main import cli

pytestmark = pytest.mark.slow
boto3 = pytest.importorskip("boto3")


def train(runs_dir: str, epochs: int = 3, extra_callbacks: tuple = (), **options):
    import keras
    import numpy as np

    import advisor

    rng = np.random.default_rng(0)
    x = rng.random((2048, 8), dtype=np.float32)
    y = rng.random((2048, 1), dtype=np.float32)
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        window_seconds=0.2,
        warmup_steps=2,
        log_every_seconds=None,
        telemetry=False,
        **options,
    )
    model.fit(x, y, batch_size=32, epochs=epochs, callbacks=[callback, *extra_callbacks], verbose=0)
    return callback


def keys(bucket: str, prefix: str = "") -> set[str]:
    s3 = boto3.client("s3")
    return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])}


def test_train_upload_and_check_from_s3(aws, tmp_path, caplog):
    boto3.client("s3").create_bucket(Bucket="team-runs")
    url = "s3://team-runs/advisor"
    with caplog.at_level(logging.DEBUG, logger="advisor"):
        callback = train(url, instance_type="g5.xlarge")
        assert callback.uploader.wait(60), callback.uploader.last_error
    run_id = callback.writer.run_id
    assert not callback.writer.path.exists(), "the spool is removed once the upload is confirmed"
    assert {f"advisor/{run_id}/run.json", f"advisor/{run_id}/worker-0.jsonl"} <= keys("team-runs")

    runner = CliRunner()
    listed = runner.invoke(cli, ["--runs-dir", url, "runs"])
    assert listed.exit_code == 0 and run_id in listed.output, listed.output
    check = runner.invoke(cli, ["check", f"{url}/{run_id}", "--format", "json", "--exit-zero"])
    assert check.exit_code == 0, check.output
    report = json.loads(check.stdout)
    assert report["run"]["run_id"] == run_id and report["run"]["status"] == "finished"
    m102 = next(f for f in report["findings"] if f["code"] == "M102")
    assert (
        m102["status"] == "pass"
    )  # samples per dollar is known: throughput and the g5.xlarge price
    whole = runner.invoke(cli, ["check", url, "--format", "json", "--exit-zero"])
    assert whole.exit_code == 0 and run_id in whole.output
    shown = runner.invoke(cli, ["--runs-dir", url, "show", run_id, "--format", "json"])
    facts = json.loads(shown.stdout)["facts"]
    assert facts["throughput.samples_per_s"] > 0 and facts["cost.samples_per_dollar"] > 0
    assert_no_secrets(
        Path(os.environ["ADVISOR_CACHE_DIR"]),
        listed.output,
        check.output,
        shown.output,
        caplog.text,
    )


def test_s3_outage_mid_training_keeps_the_spool_and_retries(tmp_path, monkeypatch):
    import keras

    from advisor.cloud import spool
    from advisor.store.reader import RunReader
    from advisor.store.schema import EpochRecord

    server = MotoServer()
    server.start()
    try:
        point_at(monkeypatch, server.url, tmp_path)
        monkeypatch.setattr(spool, "MAX_BACKOFF_S", 1.0)  # retry every second (AWS: up to a minute)
        boto3.client("s3").create_bucket(Bucket="flaky-runs")

        class Outage(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                if epoch == 0:
                    server.stop()  # S3 disappears after the first epoch's upload request

        callback = train("s3://flaky-runs/r", epochs=4, extra_callbacks=(Outage(),))
        # The uploads asked for at the later epoch ends and at the end fail (a refused connection
        # fails at once): wait for the first failure, then the uploader must still not be done.
        deadline = time.monotonic() + 30
        while callback.uploader.failures < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not callback.uploader.wait(1)
        assert (
            callback.uploader.failures >= 1 and "cannot reach AWS" in callback.uploader.last_error
        )
        run = RunReader(callback.writer.path).read()  # the spool holds the whole run
        assert run.status == "finished" and len(run.of_type(EpochRecord)) == 4

        server.start()  # S3 is back: the uploader's next retry sends everything
        # (moto's server starts empty; the bucket an outage would not have lost is made again, and
        # a retry that comes first meets NoSuchBucket, which the uploader retries as well)
        boto3.client("s3").create_bucket(Bucket="flaky-runs")
        assert callback.uploader.wait(60), callback.uploader.last_error
        assert not callback.writer.path.exists()
        check = CliRunner().invoke(
            cli,
            [
                "--runs-dir",
                "s3://flaky-runs/r",
                "show",
                callback.writer.run_id,
                "--format",
                "json",
                "--no-diagnosis",
            ],
        )
        assert check.exit_code == 0, check.output
        assert json.loads(check.stdout)["facts"]["run.epochs"] == 4
    finally:
        server.stop()


SCRIPT = textwrap.dedent("""
    import os, numpy as np, keras, advisor
    x = np.random.rand(512, 4).astype("float32"); y = np.random.rand(512, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(
        runs_dir="s3://late-bucket/runs", log_every_seconds=None, telemetry=False
    )
    model.fit(x, y, batch_size=32, epochs=2, callbacks=[cb], verbose=0)
    # The first upload (asked for at the first epoch end) has failed before the process exits: on
    # a busy host, importing boto3 and asking took longer than the fit and the 1 s final wait.
    import time
    deadline = time.monotonic() + 120
    while cb.uploader.failures < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    print(cb.writer.run_id)
""")


def test_missing_bucket_warns_once_and_advisor_upload_sends_it_later(aws, tmp_path):
    # At exit the uploader waits ADVISOR_UPLOAD_WAIT_S for the bucket (120 s by default); the
    # script waits for its first failure before it exits, so the warning is there on a busy host.
    env = {**os.environ, "ADVISOR_UPLOAD_WAIT_S": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = proc.stdout.strip().splitlines()[-1]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("advisor: upload to")]
    assert len(warnings) == 1, proc.stderr[-3000:]
    assert "bucket 'late-bucket' does not exist" in warnings[0] and "advisor upload" in warnings[0]
    assert sum("is not uploaded" in line for line in proc.stderr.splitlines()) == 1

    from advisor.cloud.spool import pending

    (left,) = pending("s3://late-bucket/runs")
    assert left.state.run_id == run_id and (left.folder / "worker-0.jsonl").is_file()
    boto3.client("s3").create_bucket(Bucket="late-bucket")
    out = CliRunner().invoke(cli, ["--runs-dir", "s3://late-bucket/runs", "upload"])
    assert out.exit_code == 0, out.output
    assert f"{run_id}: 2 file(s) uploaded" in out.output and "spool removed" in out.output
    assert not left.folder.exists()
    assert f"runs/{run_id}/worker-0.jsonl" in keys("late-bucket")
    assert_no_secrets(Path(os.environ["ADVISOR_CACHE_DIR"]), proc.stderr, proc.stdout, out.output)
