"""Shared test setup: quiet TensorFlow, one thread per op pool (2-core machines), tiny models."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "2")
# torch (and OpenMP BLAS) with one thread, here and in the processes tests start (DESIGN.md): on a
# shared 2-core machine torch's 2-thread OpenMP pool turned a 2.5 ms step into 10–140 ms.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh store for the test; ADVISOR_RUNS_DIR points at it."""
    path = tmp_path / "runs"
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(path))
    return path


# A real sweep whose JAX configuration loses worker 1 (it SIGKILLs itself at step 3 of epoch 1),
# followed by a one-process mirrored configuration: tests/launch/test_sweep_real.py checks the
# sweep (the failure and that it went on) and tests/faults/test_killed_runs.py the lost worker's
# run. Two JAX processes started once for both; the sweep id is unique to this test process (a
# shared CI host may run another suite, whose processes must not count as our leftovers).
@pytest.fixture(scope="session")
def killed_worker_sweep(tmp_path_factory):
    """(sweep id, runs directory, the ``advisor scale`` result) of the sweep above."""
    from click.testing import CliRunner

    from advisor.cli.main import cli

    pytest.importorskip("jax")
    train = str(Path(__file__).resolve().parents[1] / "examples" / "scaling" / "train.py")
    sweep_id = f"kill{os.getpid()}"
    runs = tmp_path_factory.mktemp("killed-sweep") / "runs"
    result = CliRunner().invoke(cli, [
        "--runs-dir", str(runs), "scale", "--workers", "2", "--strategy", "jax", "--strategy", "mirrored",
        "--timeout", "90", "--sweep-id", sweep_id, "--no-report", "--",
        sys.executable, train, "--epochs", "2", "--samples", "1024", "--hidden", "32",
        "--batch-per-replica", "32", "--kill-rank", "1", "--kill-at-step", "3",
    ], catch_exceptions=False)
    return sweep_id, runs, result


KILLED_SCRIPT = textwrap.dedent("""
    import os, time
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, keras, advisor

    class Slow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.01)

    x = np.random.rand(100000, 4).astype("float32"); y = np.random.rand(100000, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(window_s=0.4, warmup_steps=1, log_every_s=None)
    model.fit(x, y, batch_size=8, epochs=1, callbacks=[cb, Slow()], verbose=0)
""")


@pytest.fixture(scope="session")
def killed_mid_window(tmp_path_factory):
    """(store, windows on disk before the kill) of a training process SIGKILLed mid-epoch, in the
    middle of a 0.4 s window, once at least five windows were flushed. Shared by
    tests/collectors/test_killed.py and tests/faults/test_killed_runs.py: one process for both."""
    from advisor.store.reader import list_run_dirs

    runs_dir = tmp_path_factory.mktemp("killed") / "runs"
    env = {**os.environ, "ADVISOR_RUNS_DIR": str(runs_dir)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SCRIPT], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        windows = 0
        while time.monotonic() < deadline and windows < 5:
            time.sleep(0.1)
            dirs = list_run_dirs(runs_dir)
            if dirs and (dirs[0] / "worker-0.jsonl").exists():
                windows = (dirs[0] / "worker-0.jsonl").read_text().count('"type":"window"')
            assert proc.poll() is None, "training ended before it was killed"
        assert windows >= 5, "no windows were written in time"
        time.sleep(0.2)  # about half of a 0.4 s window: the kill lands mid-window
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return runs_dir, windows
