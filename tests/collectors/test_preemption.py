"""SIGTERM during a real fit (a process of its own, sent the signal by this test once its first
epoch has ended): the run is closed as ``terminated (SIGTERM)`` with the time, the process still
ends as SIGTERM ends it (or as the script's own handler says), and Keras's ``BackupAndRestore``
resumes the rerun. A fit sent SIGKILL instead still reads as ``killed``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import EndRecord, EventRecord

pytestmark = pytest.mark.slow  # trains models in processes of their own

# A fit long enough to be mid-epoch when the signal comes (60 epochs of a tiny model), that says
# when it is a few steps into its second epoch (the test's cue: the first epoch has ended and its
# backup is written, whatever the epoch-end callbacks take on a busy host) and which epoch each
# rerun starts at.
SCRIPT = """
import os, signal, sys
import numpy as np
import keras
import advisor

folder = sys.argv[1]
if os.environ.get("OWN_HANDLER"):
    def own(signum, frame):
        open(os.path.join(folder, "own-handler-ran"), "w").close()
        sys.exit(7)
    signal.signal(signal.SIGTERM, own)

class Cue(keras.callbacks.Callback):
    epoch = 0
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        with open(os.path.join(folder, "epochs"), "a") as fh:
            fh.write(f"{epoch}\\n")
    def on_train_batch_end(self, batch, logs=None):
        if self.epoch >= 1 and batch == 2:  # mid-epoch, after the first epoch's backup
            open(os.path.join(folder, "cue"), "w").close()

x = np.random.default_rng(0).normal(size=(2048, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(
    x, y, batch_size=16, epochs=int(os.environ.get("EPOCHS", "60")), verbose=0,
    callbacks=[
        keras.callbacks.BackupAndRestore(os.path.join(folder, "backup")),
        Cue(),
        advisor.AdvisorCallback(runs_dir=os.path.join(folder, "runs"), warmup_steps=2),
    ],
)
open(os.path.join(folder, "fit-returned"), "w").close()
"""


def _start(folder: Path, **env: str) -> subprocess.Popen[bytes]:
    folder.mkdir(parents=True)
    (folder / "train.py").write_text(SCRIPT, encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, str(folder / "train.py"), str(folder)],
        env={**os.environ, "KERAS_BACKEND": "tensorflow", **env},
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "stderr.log", "wb"),  # noqa: SIM115 (closed with the process)
    )


def _signal_after_first_epoch(proc: subprocess.Popen[bytes], folder: Path, sig: int) -> int:
    deadline = time.monotonic() + 240
    while not (folder / "cue").exists():
        assert proc.poll() is None, (folder / "stderr.log").read_text()[-2000:]
        assert time.monotonic() < deadline, "the fit did not end its first epoch in 240 s"
        time.sleep(0.1)
    proc.send_signal(sig)
    return proc.wait(timeout=120)


@pytest.fixture(scope="module")
def ended(tmp_path_factory):
    """Three fits side by side, each signalled after its first epoch: SIGTERM (default action),
    SIGTERM with the script's own handler, SIGKILL. Their folders and exit statuses."""
    root = tmp_path_factory.mktemp("preempt")
    cases = {
        "term": ("term", signal.SIGTERM, {}),
        "own": ("own", signal.SIGTERM, {"OWN_HANDLER": "1"}),
        "kill": ("kill", signal.SIGKILL, {}),
    }
    procs = {name: (_start(root / sub, **env), sig) for name, (sub, sig, env) in cases.items()}
    return {
        name: (root / cases[name][0], _signal_after_first_epoch(proc, root / cases[name][0], sig))
        for name, (proc, sig) in procs.items()
    }


def _runs(runs_dir: Path, *args: str) -> str:
    from advisor.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs_dir), "runs", *args], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_sigterm_closes_the_run_as_terminated_then_ends_the_process_as_sigterm_does(ended):
    folder, code = ended["term"]
    assert code == -signal.SIGTERM  # the default action still ended it, after the run was closed
    assert not (folder / "fit-returned").exists()
    (run_dir,) = list_run_dirs(folder / "runs")
    run = RunReader(run_dir).read()
    assert run.status == "terminated" and run.manifest.signal == "SIGTERM"
    (end,) = run.of_type(EndRecord)
    assert end.status == "terminated" and end.signal == "SIGTERM"
    assert run.manifest.ended == pytest.approx(end.t)
    said = [e.message for e in run.of_type(EventRecord) if e.source == "advisor"]
    assert any(m.startswith("terminated by SIGTERM at ") for m in said), said
    assert "terminated (SIGTERM)" in _runs(folder / "runs")
    (row,) = json.loads(_runs(folder / "runs", "--format", "json"))
    assert (row["status"], row["signal"]) == ("terminated", "SIGTERM")
    assert any("terminated by SIGTERM" in reason for reason in run.incomplete)


def test_the_scripts_own_handler_still_runs(ended):
    folder, code = ended["own"]
    assert code == 7 and (folder / "own-handler-ran").exists()
    (run_dir,) = list_run_dirs(folder / "runs")
    assert RunReader(run_dir).read().status == "terminated"


def test_sigkill_still_reads_as_killed(ended):
    folder, code = ended["kill"]
    assert code == -signal.SIGKILL
    (run_dir,) = list_run_dirs(folder / "runs")
    assert RunReader(run_dir).read().status == "killed"
    listed = _runs(folder / "runs")
    assert "killed" in listed and "terminated" not in listed


def test_backup_and_restore_resumes_after_sigterm(ended):
    """The backup Keras left at the last epoch end survives the handler: a rerun starts there."""
    folder, _ = ended["term"]
    started = [int(e) for e in (folder / "epochs").read_text().split()]
    assert len(started) >= 2  # it was mid-epoch (after the cue) when the signal came
    rerun = subprocess.run(
        [sys.executable, str(folder / "train.py"), str(folder)],
        env={**os.environ, "KERAS_BACKEND": "tensorflow", "EPOCHS": str(started[-1] + 1)},
        capture_output=True,
        timeout=240,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    resumed = [int(e) for e in (folder / "epochs").read_text().split()][len(started) :]
    assert resumed and resumed[0] >= 1  # not from epoch 0: the backup of a finished epoch was read
    statuses = sorted(RunReader(d).read().status for d in list_run_dirs(folder / "runs"))
    assert statuses == ["finished", "terminated"]


def test_show_and_the_terminal_ui_say_terminated_or_killed(ended):
    """``advisor show`` and the TUI's Runs screen name each end as it was: a SIGTERM's run
    "terminated", never "killed"; a SIGKILL's run "killed"."""
    from advisor.cli.main import cli
    from advisor.service import RunService
    from advisor.service.listing import digest, entries
    from advisor.tui.model import RunView

    for name, said, never in (("term", "terminated", "killed"), ("kill", "killed", "terminated")):
        runs = ended[name][0] / "runs"
        # the signalled run: the first (the backup test reruns the script beside it)
        run_dir = min(list_run_dirs(runs), key=lambda p: RunReader(p).read().manifest.created)
        shown = CliRunner().invoke(
            cli, ["--runs-dir", str(runs), "show", str(run_dir)], catch_exceptions=False
        )
        assert said in shown.stdout and never not in shown.stdout, shown.stdout
        service = RunService(runs)
        (row,) = [r for r in entries(service) if Path(r.path) == run_dir]
        assert RunView(row, digest(service, row.path)).status == said
