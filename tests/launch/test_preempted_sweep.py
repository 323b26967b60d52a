"""A local sweep whose worker is told to stop (SIGTERM, as a spot reclaim or an eviction sends it
to the training process) mid-fit: the configuration fails as preempted, its run reads
`terminated (SIGTERM)`, and the sweep goes on with the next configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.store.reader import RunReader
from advisor.store.sweep import read_sweep, sweep_dir

pytestmark = pytest.mark.slow  # trains in processes of its own

# The first configuration trains long enough to be stopped mid-fit whatever the machine's speed;
# the second (the next repeat) is short.
TRAIN = """
import os
import numpy as np
import keras
import advisor

long = os.environ["ADVISOR_RUN_ID"].endswith("-r0")
x = np.random.default_rng(0).normal(size=(1024, 8)).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, x.sum(axis=1), batch_size=32, epochs=500 if long else 2, verbose=0,
          callbacks=[advisor.AdvisorCallback(window_seconds=0.5)])
"""


def test_a_preempted_configuration_says_so_and_the_sweep_goes_on(tmp_path):
    runs, sweep_id = tmp_path / "runs", f"preempt{os.getpid()}"
    train = tmp_path / "train.py"
    train.write_text(TRAIN, encoding="utf-8")
    argv = [
        sys.executable, "-m", "advisor.cli.main", "--runs-dir", str(runs), "scale", "--workers",
        "1", "--strategy", "single", "--repeat", "2", "--timeout", "240", "--sweep-id", sweep_id,
        "--no-report", "--", sys.executable, str(train),
    ]  # fmt: skip
    scale = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = runs / f"{sweep_id}-single-n1-r0"
    deadline = time.monotonic() + 240
    while not _trained_a_window(first / "worker-0.jsonl"):
        assert scale.poll() is None, scale.communicate()
        assert time.monotonic() < deadline, "the first configuration never trained a window"
        time.sleep(0.2)
    pid = json.loads((first / "run.json").read_text())["pid"]
    os.kill(pid, signal.SIGTERM)
    out, err = scale.communicate(timeout=300)
    assert scale.returncode == 1, err.decode()[-2000:]
    preempted, second = read_sweep(sweep_dir(runs, sweep_id)).configs
    assert preempted.status == "failed" and preempted.reason.startswith(
        "preempted: its run was terminated (SIGTERM) at "
    ), preempted.reason
    assert "worker 0 was terminated by SIGTERM" in preempted.reason
    assert RunReader(first).read().status == "terminated"
    assert second.status == "finished", (second.reason, second.log_tail)


def _trained_a_window(path: Path) -> bool:
    try:
        return any(
            json.loads(line).get("type") == "window" for line in path.read_text().splitlines()
        )
    except (OSError, ValueError):
        return False
