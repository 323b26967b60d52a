"""MLflow: metrics at window ends during fit, report and plots at the end, export afterwards.

Against a real local MLflow tracking store (SQLite backend in the test's folder), no mocks.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
pytest.importorskip("sqlalchemy", reason="the mlflow extra (SQLite store) is not installed")

sys.path.insert(0, str(Path(__file__).parents[1] / "scaling"))
from scaling_fixtures import write_run  # noqa: E402

from advisor.cli.main import cli  # noqa: E402
from advisor.integrations.mlflow_metrics import series_of  # noqa: E402
from advisor.store.schema import GpuSample, HostSample, WindowRecord  # noqa: E402


@pytest.fixture(scope="module")
def migrated_store(tmp_path_factory) -> Path:
    """An empty SQLite tracking store, created once: MLflow creates a store by running its
    schema migrations (~2 s, more on a busy machine), so each test starts from a copy."""
    folder = tmp_path_factory.mktemp("mlflow-template")
    mlflow.tracking.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").search_experiments()
    return folder / "mlflow.db"


@pytest.fixture
def tracking(tmp_path, monkeypatch, migrated_store):
    db = tmp_path / "mlflow.db"
    shutil.copyfile(migrated_store, db)
    con = sqlite3.connect(db)  # as if created here: the default experiment's artifacts in ./mlruns
    with con:
        con.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
            (str(tmp_path / "mlruns" / "0"),),
        )
    con.close()
    uri = f"sqlite:///{db}"
    monkeypatch.chdir(tmp_path)  # the SQLite store keeps artifacts in ./mlruns
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()


def _fit(runs_dir, epochs=3, callbacks=(), **options):
    import keras

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2048, 16)).astype("float32")
    y = rng.normal(size=(2048, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    import advisor

    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        window_seconds=0.2,
        warmup_steps=2,
        log_every_seconds=None,
        price_per_hour=2.0,
        pipeline=False,
        telemetry_interval_seconds=0.1,
        **options,
    )
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, callbacks=[*callbacks, cb])
    return cb


def test_metric_series_arithmetic():
    """samples/s × workers, samples/$, utilization means per window, energy by counter or power."""
    t = 1000.0
    records = [
        WindowRecord(
            t=t, epoch=0, seconds=1.0, steps=2, samples=64, step_begin=0, step_end=2, warmup=True
        ),
        GpuSample(t=t + 1, index=0, util=50.0, energy_j=1000.0),
        GpuSample(t=t + 1, index=1, util=70.0, power_w=100.0),
        HostSample(t=t + 1, cpu_percent=[20.0, 40.0]),
        GpuSample(t=t + 2, index=0, util=90.0, energy_j=4600.0),
        GpuSample(t=t + 3, index=1, util=90.0, power_w=200.0),
        WindowRecord(
            t=t + 3,
            epoch=0,
            seconds=2.0,
            steps=10,
            samples=320,
            step_begin=2,
            step_end=12,
            step_time_mean=0.2,
        ),
    ]
    (point,) = series_of(records, scale=2, price_per_hour=3.6)
    assert point.step == 12 and point.timestamp_ms == int((t + 3) * 1000)
    v = point.keyed()
    assert v["advisor.samples_per_s"] == pytest.approx(320 / 2.0 * 2)
    assert v["advisor.samples_per_dollar"] == pytest.approx(320.0 * 3600 / 3.6)
    assert v["advisor.step_time_ms"] == pytest.approx(200.0)
    assert v["advisor.gpu_util"] == pytest.approx((50 + 70 + 90 + 90) / 4)
    assert v["advisor.cpu_util"] == pytest.approx(30.0)
    # GPU 0: counter 1000 → 4600 J; GPU 1: (100 + 200) / 2 W × 2 s = 300 J.
    assert v["advisor.energy_wh"] == pytest.approx((3600 + 300) / 3600)


def test_export_after_training_makes_a_run_with_series_report_and_plots(tracking, tmp_path):
    runs = tmp_path / "runs"
    write_run(
        runs,
        "plain-1",
        sweep_id=None,
        strategy="single",
        workers=1,
        epochs=[2.0, 1.0, 1.0],
        samples_per_epoch=640,
        steps_per_epoch=10,
        tags=False,
        price_per_hour=1.8,
    )
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(runs),
            "export",
            "plain-1",
            "--to",
            "mlflow",
            "--experiment",
            "advisor-tests",
        ],
    )
    assert result.exit_code == 0, result.output
    client = mlflow.tracking.MlflowClient(tracking)
    (run,) = client.search_runs([client.get_experiment_by_name("advisor-tests").experiment_id])
    assert run.info.run_name == "plain-1" and run.data.tags["advisor.run_id"] == "plain-1"
    history = client.get_metric_history(run.info.run_id, "advisor.samples_per_s")
    assert [m.step for m in history] == [10, 20, 30]
    assert [m.value for m in history] == pytest.approx([320.0, 640.0, 640.0])
    assert run.data.metrics["advisor.throughput.samples_per_s"] == pytest.approx(1920 / 4.0)
    assert run.data.metrics["advisor.cost.samples_per_dollar"] == pytest.approx(
        1920 / 4.0 * 3600 / 1.8
    )
    files = _artifacts(client, run.info.run_id)
    assert {
        "advisor/report.json",
        "advisor/report.txt",
        "advisor/plots/epochs.png",
        "advisor/run/run.json",
        "advisor/run/worker-0.jsonl",
    } <= files
    report = json.loads(
        Path(
            client.download_artifacts(run.info.run_id, "advisor/report.json", str(tmp_path))
        ).read_text()
    )
    assert report["run"]["run_id"] == "plain-1"
    assert run.data.metrics["advisor.findings.fail"] == sum(
        f["status"] == "fail" for f in report["findings"]
    )
    # A second export into the same MLflow run does not log the series twice.
    again = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(runs),
            "export",
            "plain-1",
            "--to",
            "mlflow",
            "--mlflow-run",
            run.info.run_id,
        ],
    )
    assert again.exit_code == 0, again.output
    assert len(client.get_metric_history(run.info.run_id, "advisor.samples_per_s")) == 3


def test_export_names_a_missing_run_and_a_bad_store_in_one_line(tracking, tmp_path):
    runs = tmp_path / "runs"
    write_run(
        runs,
        "plain-1",
        sweep_id=None,
        strategy="single",
        workers=1,
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=2,
        tags=False,
    )
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(runs),
            "export",
            "plain-1",
            "--to",
            "mlflow",
            "--mlflow-run",
            "0123456789abcdef",
        ],
    )
    assert result.exit_code == 2
    assert "MLflow at" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_fit_logs_window_metrics_and_the_report_into_the_active_run(tracking, tmp_path):
    with mlflow.start_run() as active:
        cb = _fit(tmp_path / "runs", mlflow=True)
    # fit did not wait for the report's export: a non-daemon thread follows it (the interpreter
    # waits for it at exit); here the test waits.
    exporter = cb.collectors[-1].export_thread
    assert exporter is not None and not exporter.daemon
    exporter.join(180)
    client = mlflow.tracking.MlflowClient(tracking)
    run_id = active.info.run_id
    history = client.get_metric_history(run_id, "advisor.samples_per_s")
    assert len(history) >= 3, "one point per finished window"
    steps = [m.step for m in history]
    assert steps == sorted(steps) and all(m.value > 0 for m in history)
    assert client.get_metric_history(run_id, "advisor.samples_per_dollar")[
        0
    ].value == pytest.approx(history[0].value * 3600 / 2.0)
    assert client.get_metric_history(run_id, "advisor.cpu_util"), (
        "host utilization is measured on every machine"
    )
    run = client.get_run(run_id)
    assert run.data.tags["advisor.run_id"] == cb.writer.run_id
    params = run.data.params  # the run's settings, as MLflow params
    assert (
        params["advisor.backend"] == "tensorflow" and params["advisor.steps_per_execution"] == "1"
    )
    assert int(params["advisor.batch_size"]) > 0 and params["advisor.workers"] == "1"
    files = _artifacts(client, run_id)
    assert {"advisor/report.json", "advisor/plots/epochs.png", "advisor/run/run.json"} <= files
    # The series was logged during training: the export at the end did not log it again.
    windows = [
        json.loads(line) for line in (cb.run_path / "worker-0.jsonl").read_text().splitlines()
    ]
    measured = [w for w in windows if w["type"] == "window" and not w.get("warmup")]
    assert len(history) == len(measured)
    assert cb.collectors[-1].error is None


@pytest.mark.slow
def test_a_failing_tracking_store_never_fails_the_fit(tracking, tmp_path):
    """The store breaks mid-training (metrics table dropped): logged once, recorded, fit goes on."""
    import keras

    db = tracking.removeprefix("sqlite:///")

    class BreakStore(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                with sqlite3.connect(db) as con:
                    con.execute("DROP TABLE metrics")

    with mlflow.start_run():
        t0 = time.perf_counter()
        cb = _fit(tmp_path / "runs", epochs=3, callbacks=[BreakStore()], mlflow=True)
        seconds = time.perf_counter() - t0
    records = [
        json.loads(line) for line in (cb.run_path / "worker-0.jsonl").read_text().splitlines()
    ]
    events = [r for r in records if r["type"] == "event" and r["source"] == "mlflow"]
    assert len(events) == 1 and "logging to MLflow failed" in events[0]["message"]
    assert json.loads((cb.run_path / "run.json").read_text())["status"] == "finished"
    assert sum(r["type"] == "epoch" for r in records) == 3
    assert seconds < 120


@pytest.mark.slow
def test_no_active_run_is_a_note_not_an_error(tracking, tmp_path):
    cb = _fit(tmp_path / "runs", epochs=1, mlflow=True)
    records = [
        json.loads(line) for line in (cb.run_path / "worker-0.jsonl").read_text().splitlines()
    ]
    (event,) = [r for r in records if r["type"] == "event" and r["source"] == "mlflow"]
    assert "no MLflow run is active" in event["message"] and event["level"] == "warning"


def _artifacts(client, run_id, path="advisor"):
    out = set()
    for item in client.list_artifacts(run_id, path):
        out |= _artifacts(client, run_id, item.path) if item.is_dir else {item.path}
    return out
