"""Real sweeps on loopback: tf_keras MultiWorkerMirrored and JAX multi-process with 1 and 2
workers, MirroredStrategy over 1 and 2 logical CPU devices, and a worker killed mid-run.

One tiny model (examples/scaling/train.py), two short epochs. Each multi-worker start costs
several seconds here, so the whole file runs two sweeps: the six-point one and, beside it in a
process of its own, the Keras 3 sweep that fails (two TensorFlow starts, which would otherwise
wait for the six configurations; four of those are a single process, about one core of two). The
sweep with a killed worker is a session fixture (tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from stragglers import assert_healthy_workers

from advisor.service import RunService
from advisor.store.reader import RunReader
from advisor.store.schema import BudgetRecord
from advisor.store.sweep import read_sweep, sweep_dir

# Real multi-process clusters on loopback (TensorFlow's gRPC, JAX's coordinator over gloo), like the
# Slurm and Ray sweeps beside this file: `cluster`, run by `-m cluster` and CI's own step.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (CPU)"),
]

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "scaling" / "train.py")
TINY = ["--epochs", "2", "--samples", "1024", "--hidden", "32", "--batch-per-replica", "32"]


def _scale(runs_dir: Path, *args: str) -> object:
    from advisor.cli.main import cli

    return CliRunner().invoke(
        cli, ["--runs-dir", str(runs_dir), "scale", *args], catch_exceptions=False
    )


# Sweep ids unique to this test process: another test run on the same machine (a shared CI host)
# must not be counted as our leftover processes.
REAL, K3 = (f"{name}{os.getpid()}" for name in ("real", "k3"))


def _leftovers(sweep_id: str) -> list[int]:
    """Processes still alive that were started for this sweep (their environment says so)."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if (
                proc.info["status"] != psutil.STATUS_ZOMBIE
                and proc.environ().get("ADVISOR_SWEEP_ID") == sweep_id
            ):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


KERAS3_MULTIWORKER = """
import numpy as np, tensorflow as tf, keras, advisor
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile("adam", "mse")
x = np.zeros((64, 8), "float32")
model.fit(tf.data.Dataset.from_tensor_slices((x, x[:, :4])).batch(16), epochs=1, verbose=0,
          callbacks=[advisor.AdvisorCallback(log_every_seconds=None)])
"""


@pytest.fixture(scope="module")
def keras3_sweep(tmp_path_factory):
    """The Keras 3 sweep of the last test, started as a process of its own (the real sweep below
    runs beside it): (runs directory, a function that waits for it and returns its exit code,
    stdout and stderr). It has ended, or is stopped, before the module's last test is done."""
    folder = tmp_path_factory.mktemp("k3")
    script = folder / "k3.py"
    script.write_text(KERAS3_MULTIWORKER)
    runs = folder / "runs"
    out, err = folder / "scale.out", folder / "scale.err"
    with open(out, "wb") as out_file, open(err, "wb") as err_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "advisor.cli.main",
                "--runs-dir",
                str(runs),
                "scale",
                "--workers",
                "2",
                "--strategy",
                "multiworker",
                "--timeout",
                "90",
                "--sweep-id",
                K3,
                "--no-report",
                "--",
                "python",
                str(script),
            ],
            stdout=out_file,
            stderr=err_file,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )

    def result() -> tuple[int, str, str]:
        proc.wait(timeout=300)  # one configuration of at most 90 s
        return proc.returncode, out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")

    yield runs, result
    if (
        proc.poll() is None
    ):  # a test failed before it waited: SIGINT, on which the sweep ends its workers
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, keras3_sweep):
    # keras3_sweep: started first, so that it runs beside this one
    runs = tmp_path_factory.mktemp("sweep") / "runs"
    result = _scale(
        runs,
        "--workers",
        "1,2",
        "--strategy",
        "mirrored",
        "--strategy",
        "multiworker",
        "--strategy",
        "jax",
        "--timeout",
        "120",
        "--sweep-id",
        REAL,
        "--",
        "python",
        TRAIN,
        *TINY,
    )
    return runs, result


def test_every_configuration_finished(sweep):
    runs, result = sweep
    record = read_sweep(sweep_dir(runs, REAL))
    assert len(record.configs) == 6  # three strategies at 1 and 2 workers: none left out
    failed = {c.run_id: (c.reason, c.log_tail) for c in record.configs if c.status != "finished"}
    assert failed == {}, failed
    assert result.exit_code == 0
    assert "Scaling report — sweep real" in result.stdout


@pytest.mark.parametrize(
    "config,strategy,ranks,replicas,legacy",
    [
        ("mirrored-n1", "MirroredStrategy", 1, 1, False),
        ("mirrored-n2", "MirroredStrategy", 1, 2, False),
        ("multiworker-n1", "CollectiveAllReduceStrategy", 1, 1, True),  # tf_keras names it so
        ("multiworker-n2", "CollectiveAllReduceStrategy", 2, 2, True),
        ("jax-n1", "DataParallel", 1, 1, False),
        ("jax-n2", "DataParallel", 2, 2, False),
    ],
)
def test_each_run_knows_its_strategy(sweep, config, strategy, ranks, replicas, legacy):
    runs, _ = sweep
    run = RunReader(runs / f"{REAL}-{config}-r0").read()
    m = run.manifest
    assert run.status == "finished" and m.sweep_id == REAL
    assert (m.strategy, m.replicas, len(run.ranks), m.num_workers) == (
        strategy,
        replicas,
        ranks,
        ranks,
    )
    assert m.framework.legacy_keras is legacy
    assert m.framework.backend == ("jax" if config.startswith("jax") else "tensorflow")
    # Each worker keeps its own time budget (Mirrored, MultiWorkerMirrored, JAX DataParallel).
    for rank in run.ranks:
        (final,) = [b for b in run.of_type(BudgetRecord, rank=rank) if b.final]
        assert sum(final.seconds.values()) == pytest.approx(final.wall_seconds, abs=1e-4)
        assert final.seconds["train_steps"] > 0


def test_report_of_the_real_sweep(sweep):
    runs, _ = sweep
    table = RunService(runs).scaling_table(REAL)
    assert [(r.strategy, r.workers) for r in table.rows] == [
        (s, n) for s in ("mirrored", "multiworker", "jax") for n in (1, 2)
    ]
    for row in table.rows:
        assert row.epoch_s and row.epoch_s > 0 and row.samples_per_s and row.samples_per_s > 0
        assert row.speedup is not None and row.efficiency is not None
        # fixed per-replica batch: 32 per replica whatever the strategy and count
        assert row.per_replica_batch == pytest.approx(32)
    assert table.failures == []
    # Healthy two-process runs: who waits least is measured, far from a deliberate straggler, and
    # named exactly where D651 fails (a shared host can slow one rank: tests/support/stragglers.py).
    for strategy in ("multiworker", "jax"):
        assert_healthy_workers(table.row(strategy, 2), table.findings)
    assert table.row("mirrored", 2).straggler_share is None  # one process: nobody to wait for
    facts, errors = RunService().facts(runs / f"{REAL}-multiworker-n2-r0")
    assert errors == []
    assert facts["scaling.points"] == 6 and facts["scaling.strategies"] == 3
    assert facts["scaling.workers"] == 2 and "scaling.efficiency" in facts
    assert _leftovers(REAL) == []


def test_killed_worker_fails_its_configuration_and_the_sweep_goes_on(killed_worker_sweep):
    # jax ×2 with worker 1 killed at step 3, then mirrored ×2 (tests/conftest.py)
    KILL, runs, result = killed_worker_sweep
    record = read_sweep(sweep_dir(runs, KILL))
    jax, mirrored = record.configs
    assert jax.status == "failed" and jax.reason == "worker 1 was killed by SIGKILL"
    assert jax.seconds is not None and jax.seconds < 90
    assert mirrored.status == "finished"  # one process (rank 0): the sweep went on and finished it
    assert result.exit_code == 1
    assert "jax ×2: worker 1 was killed by SIGKILL" in result.stderr
    assert _leftovers(KILL) == []
    table = RunService(runs).scaling_table(KILL)
    assert [(r.strategy, r.workers) for r in table.rows] == [("mirrored", 2)]
    assert [(f.strategy, f.workers) for f in table.failures] == [("jax", 2)]


def test_keras3_under_multiworker_fails_with_the_working_routes(keras3_sweep):
    """Keras 3 cannot fit under MultiWorkerMirroredStrategy with 2 workers (keras#20585): the
    configuration fails with Keras's own error, and the sweep says what works instead."""
    runs, result = keras3_sweep
    exit_code, _, stderr = result()
    (config,) = read_sweep(sweep_dir(runs, K3)).configs
    assert config.status == "failed" and "PerReplica" in config.log_tail
    assert "advisor/" not in config.log_tail  # Keras's own error, raised before the callback runs
    assert "tf_keras" in config.hint and "jax" in config.hint
    assert "hint: Keras 3 cannot fit under MultiWorkerMirroredStrategy" in stderr
    assert exit_code == 1  # a configuration failed
    assert _leftovers(K3) == []
