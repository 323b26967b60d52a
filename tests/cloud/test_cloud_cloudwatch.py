"""CloudWatch publishing from a real training run, read back from moto's CloudWatch: every
measured window's samples/s and samples/$ arrives, batched, with the run's dimensions."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from aws_server import assert_no_secrets

pytestmark = pytest.mark.slow
boto3 = pytest.importorskip("boto3")


def _sender_stack() -> str:
    """Where the publisher's thread is, for a failure message (it once did not finish in 30 s on
    a loaded host without logging a failed send)."""
    import sys
    import threading
    import traceback

    frames = sys._current_frames()
    stacks = [
        "".join(traceback.format_stack(frames[t.ident]))
        for t in threading.enumerate()
        if t.name == "advisor-cloudwatch" and t.ident in frames
    ]
    return "\n".join(stacks) or "no publisher thread left"


def test_window_rates_reach_cloudwatch(aws, runs_dir):
    import keras
    import numpy as np

    import advisor
    from advisor.store.reader import RunReader
    from advisor.store.schema import WindowRecord

    rng = np.random.default_rng(0)
    x, y = rng.random((4096, 8), dtype=np.float32), rng.random((4096, 1), dtype=np.float32)
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(
        window_seconds=0.2,
        warmup_steps=2,
        log_every_seconds=None,
        instance_type="g5.xlarge",
        telemetry_interval_seconds=0.1,
        cloudwatch_namespace="Advisor/Test",
    )
    model.fit(x, y, batch_size=32, epochs=3, callbacks=[callback], verbose=0)
    (collector,) = [c for c in callback.collectors if c.name == "cloudwatch"]
    publisher = collector.publisher
    # A send takes 0.1-0.4 s (quiet, or beside three busy cores). The wait is long because in a test
    # worker that ran hundreds of tests a single garbage collection was measured at 9.2 s on a quiet
    # host (docs/testing.md, "Stalls"), and any thread of the process, this publisher's too, waits
    # for it: with a core busy this wait once took 28 s of its former 30.
    assert publisher.wait(90), f"the publisher did not finish: {_sender_stack()}"
    assert publisher.failures == 0, publisher.last_error

    run = RunReader(callback.writer.path).read()
    rates = [
        w.samples / w.seconds
        for w in run.of_type(WindowRecord)
        if not w.warmup and not w.profiled and w.samples and w.seconds > 0
    ]
    assert len(rates) >= 3
    cw = boto3.client("cloudwatch")
    names = {m["MetricName"] for m in cw.list_metrics(Namespace="Advisor/Test")["Metrics"]}
    assert {"SamplesPerSecond", "SamplesPerDollar", "CPUUtilization"} <= names
    dims = [{"Name": "RunId", "Value": run.run_id}, {"Name": "Worker", "Value": "0"}]
    now = datetime.now(timezone.utc)
    stats = cw.get_metric_statistics(
        Namespace="Advisor/Test",
        MetricName="SamplesPerSecond",
        Dimensions=dims,
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=5),
        Period=7200,
        Statistics=["SampleCount", "Sum"],
    )["Datapoints"]
    assert sum(d["SampleCount"] for d in stats) == len(rates)
    assert sum(d["Sum"] for d in stats) == pytest.approx(sum(rates), rel=1e-6)
    per_dollar = cw.get_metric_statistics(
        Namespace="Advisor/Test",
        MetricName="SamplesPerDollar",
        Dimensions=dims,
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=5),
        Period=7200,
        Statistics=["Sum"],
    )["Datapoints"]
    price = run.manifest.price_per_hour
    assert sum(d["Sum"] for d in per_dollar) == pytest.approx(sum(rates) * 3600 / price, rel=1e-6)
    assert_no_secrets(runs_dir, Path(os.environ["ADVISOR_CACHE_DIR"]))


def test_unreachable_cloudwatch_never_stops_training(tmp_path, monkeypatch, runs_dir, caplog):
    import logging

    import keras
    import numpy as np
    from aws_server import free_port, point_at

    import advisor
    from advisor.cloud import cloudwatch

    point_at(monkeypatch, f"http://127.0.0.1:{free_port()}", tmp_path)  # nothing listens there
    # The publisher gives up after its third failed send, backing off 2 s then 4 s between them
    # (AWS: up to 5 min); 1 s each keeps the three real attempts and their one warning.
    monkeypatch.setattr(cloudwatch, "MAX_BACKOFF_S", 1.0)
    x, y = np.random.rand(512, 4).astype("float32"), np.random.rand(512, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(
        window_seconds=0.1,
        log_every_seconds=None,
        telemetry=False,
        cloudwatch_namespace="Advisor/Test",
    )
    with caplog.at_level(logging.WARNING, logger="advisor"):
        history = model.fit(x, y, batch_size=16, epochs=2, callbacks=[callback], verbose=0)
        (collector,) = [c for c in callback.collectors if c.name == "cloudwatch"]
        assert collector.publisher.wait(60)
    assert len(history.history["loss"]) == 2
    warnings = [r.getMessage() for r in caplog.records if "CloudWatch" in r.getMessage()]
    assert len(warnings) == 1 and "cannot reach AWS" in warnings[0]
    assert advisor.RunService(runs_dir).analyse(callback.writer.run_id).run.status == "finished"


def test_the_client_is_made_while_training_runs_not_at_the_first_send(tmp_path, monkeypatch):
    """Making a boto3 client reads botocore's data files (in a loaded test process it once took
    over 30 s); the publisher makes it as it starts, so the final values of a short job do not wait
    for it. No request is made for that (nothing listens on the endpoint)."""
    import time

    from aws_server import free_port, point_at

    from advisor.cloud.cloudwatch import MetricPublisher

    point_at(monkeypatch, f"http://127.0.0.1:{free_port()}", tmp_path)
    publisher = MetricPublisher("Advisor/Test", {"RunId": "r", "Worker": "0"}, interval_s=60.0)
    deadline = time.monotonic() + 30
    while publisher._cloudwatch is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert publisher._cloudwatch is not None and publisher.sent == publisher.failures == 0
    publisher.close()  # nothing queued: it ends without a request
    assert publisher.wait(10) and publisher.failures == 0 and publisher.last_error is None
