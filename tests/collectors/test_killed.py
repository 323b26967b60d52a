"""A training process killed with SIGKILL mid-epoch keeps every flushed record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import WindowRecord

pytestmark = pytest.mark.slow  # trains a model or starts a process

SCRIPT = textwrap.dedent(
    """
    import os, time
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, keras, advisor

    class Slow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.01)

    x = np.random.rand(100000, 4).astype("float32"); y = np.random.rand(100000, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(window_s=0.1, warmup_steps=1, log_every_s=None)
    model.fit(x, y, batch_size=8, epochs=1, callbacks=[cb, Slow()], verbose=0)
    """
)


def test_sigkill_mid_epoch_keeps_flushed_records(runs_dir):
    env = {**os.environ, "ADVISOR_RUNS_DIR": str(runs_dir)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        windows_seen = 0
        while time.monotonic() < deadline and windows_seen < 5:
            time.sleep(0.2)
            dirs = list_run_dirs(runs_dir)
            if dirs and (dirs[0] / "worker-0.jsonl").exists():
                windows_seen = (dirs[0] / "worker-0.jsonl").read_text().count('"type":"window"')
            assert proc.poll() is None, "the training process ended before it was killed"
        assert windows_seen >= 5, "no windows were flushed in time"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (run_dir,) = list_run_dirs(runs_dir)
    run = RunReader(run_dir).read()
    assert run.status == "killed"
    windows = run.of_type(WindowRecord)
    assert len(windows) >= windows_seen
    # Windows are contiguous: no record in the middle was lost.
    for before, after in zip(windows, windows[1:]):
        assert after.step_begin == before.step_end
