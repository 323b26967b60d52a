"""A real terminal: tmux runs ``advisor tui`` on a store made by a real small fit; the screen shows
the run id and its top finding, Enter shows the finding's fix, ``q`` quits with exit code 0.

tmux runs on its own socket (``-L``), so the test touches no other tmux server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

WIDTH, HEIGHT = 200, 50


def small_input_bound_fit(runs_dir: Path) -> str:
    """A tiny model fed by a tf.data map without prefetch or parallel calls (the demo's mistake)."""
    import keras
    import tensorflow as tf

    import advisor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 16)).astype("float32")
    y = rng.integers(0, 2, 256).astype("int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2.0, b)).batch(16)
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    callback = advisor.AdvisorCallback(
        runs_dir=runs_dir, window_seconds=0.2, log_every_seconds=None, name="tmux"
    )
    model.fit(ds, epochs=2, verbose=0, callbacks=[callback])
    return next(p.name for p in runs_dir.iterdir() if (p / "run.json").is_file())


class Tmux:
    def __init__(self, socket: str) -> None:
        self.base = ["tmux", "-L", socket]

    def __call__(self, *args: str) -> str:
        return subprocess.run(
            [*self.base, *args], check=True, capture_output=True, text=True, timeout=20
        ).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if all(t in shown for t in texts):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{texts} not on screen after {timeout} s:\n{shown}")
            time.sleep(0.3)


def test_advisor_tui_in_tmux(tmp_path):
    from advisor.service import RunService

    assert shutil.which("tmux"), "this test needs tmux (apt-get install tmux)"
    runs_dir = tmp_path / "runs"
    run_id = small_input_bound_fit(runs_dir)
    report = RunService(runs_dir).diagnose(run_id)
    assert report.failures, "the fit's input pipeline has no prefetch: there is a finding to show"
    top = report.failures[0]

    exe = Path(sys.executable).with_name("advisor")
    done = tmp_path / "exit-code"
    command = (
        f"cd {tmp_path} && "
        f"env -u COLUMNS -u LINES ADVISOR_RUNS_DIR={runs_dir} TERM=xterm-256color {exe} tui; "
        f"echo $? > {done}"
    )
    tmux = Tmux(f"advisor-test-{os.getpid()}")
    tmux("new-session", "-d", "-s", "tui", "-x", str(WIDTH), "-y", str(HEIGHT), command)
    try:
        runs = tmux.wait_for(run_id, f"{top.code} {top.name}"[:30])
        assert "1 run ·" in runs and "finished" in runs
        tmux("send-keys", "-t", "tui", "Enter")
        findings = tmux.wait_for("Fix:", f"{top.code} {top.name}")
        assert f"run {run_id}" in findings
        tmux("send-keys", "-t", "tui", "q")
        deadline = time.monotonic() + 20
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux.base, "kill-server"], capture_output=True, timeout=20, check=False)
