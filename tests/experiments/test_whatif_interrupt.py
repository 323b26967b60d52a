"""Ctrl-C during the what-if ends it and keeps the run: a real process gets a real SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("tensorflow")

SCRIPT = textwrap.dedent("""
    import faulthandler, logging, signal, sys, time
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Ctrl-C reaches a job started from a terminal. A suite run in the background of a
    # non-interactive shell (`cmd &`, nohup) hands SIGINT down ignored, and then the what-if
    # rightly leaves it ignored: this job is the terminal's.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np, keras, tensorflow as tf
    import advisor
    from advisor.experiments.model_state import ModelState

    def slow(x, y):
        time.sleep(0.002)
        return x, y

    def decode(x, y):
        xo, yo = tf.py_function(slow, [x, y], [tf.float32, tf.int64])
        xo.set_shape([16]); yo.set_shape([])
        return xo, yo

    rng = np.random.default_rng(0)
    data = (rng.normal(size=(256, 16)).astype("float32"), rng.integers(0, 4, 256).astype("int64"))
    ds = tf.data.Dataset.from_tensor_slices(data).map(decode).batch(16)
    layers = [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)]
    model = keras.Sequential(layers)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    class Snapshot(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            self.state, self.step = ModelState(self.model), self.model.train_function

    # and the advisor's debug lines: the test waits for one
    logging.basicConfig(format="%(message)s")
    logging.getLogger("advisor").setLevel(logging.DEBUG)
    snap = Snapshot()
    candidates = ["parallel_map", "prefetch", "steps_per_execution_8"]
    cb = advisor.AdvisorCallback(sys.argv[1], whatif=candidates,
                                 whatif_max_seconds=60, telemetry=False, log_every_seconds=60)
    model.fit(ds, epochs=1, verbose=0, callbacks=[snap, cb])
    same_step = model.train_function is snap.step
    print("after fit", snap.state.unchanged(), same_step, cb.run_path, flush=True)
""")


def test_ctrl_c_during_the_whatif_ends_it_and_keeps_the_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONUNBUFFERED": "1"}
    out_file = (tmp_path / "out.txt").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "runs")],
        stdout=out_file,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    started = threading.Event()

    def read_stderr() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if "advisor: what-if: calibrating" in line:  # inside the what-if's own Ctrl-C handling
                started.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert started.wait(180), "the what-if did not start: " + "".join(lines[-20:])
        time.sleep(2.0)  # into the calibration, the preparation or the rounds (a 60 s allowance)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGUSR1)  # the script dumps every thread's stack: why it hangs
            time.sleep(2)
            print("".join(lines[-200:]))  # shown by pytest with the failure
        proc.kill()
        out_file.close()
    reader.join(5)
    err = "".join(lines)
    out = (tmp_path / "out.txt").read_text()
    assert proc.returncode == 0, err[-2000:]
    words = out.split()
    assert words[:3] == ["after", "fit", "True"] and words[3] == "True", (
        out
    )  # state and step as training left them
    run = Path(words[4])
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    record = next(
        json.loads(line)
        for line in (run / "worker-0.jsonl").read_text().splitlines()
        if json.loads(line)["type"] == "whatif"
    )
    assert record["interrupted"] is True and "Ctrl-C" in (record["stopped"] or ""), (
        record,
        err[-2000:],
    )
    assert record["seconds"] < 60
