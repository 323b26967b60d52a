"""A local sweep whose worker is told to stop (SIGTERM, as a spot reclaim or an eviction sends it
to the training process) mid-fit: the configuration fails as preempted, its run reads
`terminated (SIGTERM)`, the sweep goes on with the next configuration, the scaling report builds
the row from the finished repeats alone, and `advisor scale --resume` measures what is missing.
Where the runner sees no exit code (a Ray actor gone), the run's own status says preempted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.launch.local import Outcome
from advisor.launch.plan import ProcessSpec, make_plan, merged_env
from advisor.launch.sweep import run_sweep
from advisor.service import RunService
from advisor.store.reader import RunReader
from advisor.store.sweep import read_sweep, sweep_dir

pytestmark = pytest.mark.slow  # trains in processes of its own

# The first configuration trains long enough to be stopped mid-fit whatever the machine's speed
# (its first attempt only: a rerun, after the marker file, is short); the others are short.
TRAIN = """
import os
import sys
import numpy as np
import keras
import advisor

marker = sys.argv[1] + ".started"
long = os.environ["ADVISOR_RUN_ID"].endswith(LONG) and not os.path.exists(marker)
open(marker, "a").close()
x = np.random.default_rng(0).normal(size=(1024, 8)).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, x.sum(axis=1), batch_size=32, epochs=500 if long else 2, verbose=0,
          callbacks=[advisor.AdvisorCallback(window_seconds=0.5)])
"""


def _preempted_sweep(tmp_path: Path, sweep_id: str, *options: str) -> Path:
    """Run `advisor scale` (single strategy) and SIGTERM the training process of its first
    configuration once it has trained a window; the runs directory, once the sweep has ended."""
    runs = tmp_path / "runs"
    train = tmp_path / "train.py"
    train.write_text(TRAIN.replace("LONG", '"-n1-r0"'), encoding="utf-8")
    argv = [
        sys.executable, "-m", "advisor.cli.main", "--runs-dir", str(runs), "scale",
        "--strategy", "single", "--timeout", "240", "--sweep-id", sweep_id, *options,
        "--no-report", "--", sys.executable, str(train), str(tmp_path / "marker"),
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
    return runs


def test_a_preempted_configuration_says_so_and_the_sweep_goes_on(tmp_path):
    sweep_id = f"preempt{os.getpid()}"
    runs = _preempted_sweep(tmp_path, sweep_id, "--workers", "1", "--repeat", "2")
    first = runs / f"{sweep_id}-single-n1-r0"
    preempted, second = read_sweep(sweep_dir(runs, sweep_id)).configs
    assert preempted.status == "failed" and preempted.reason.startswith(
        "preempted: its run was terminated (SIGTERM) at "
    ), preempted.reason
    assert "worker 0 was terminated by SIGTERM" in preempted.reason
    assert RunReader(first).read().status == "terminated"
    assert second.status == "finished", (second.reason, second.log_tail)
    # The report's row is the finished repeat's alone, and says one of two was preempted.
    table = RunService(runs).scaling_table(sweep_id)
    (row,) = table.rows
    assert row.runs == 1 and row.run_ids == [second.run_id] and row.epoch_s is not None
    assert "1 of 2 repeats finished, 1 preempted" in row.notes
    assert any(n.startswith("single ×1: from its finished repeats alone") for n in table.notes)
    (failure,) = table.failures
    assert failure.run_id == preempted.run_id and failure.reason.startswith("preempted:")


@pytest.mark.cluster  # a real sweep of three trainings in turn: over a minute on a busy host
def test_a_preempted_sweep_resumed_measures_what_is_missing(tmp_path):
    sweep_id = f"resume{os.getpid()}"
    runs = _preempted_sweep(tmp_path, sweep_id, "--workers", "1,2")
    assert [r.workers for r in RunService(runs).scaling_table(sweep_id).rows] == [2]
    kept = runs / f"{sweep_id}-single-n2-r0"
    kept_created = json.loads((kept / "run.json").read_text())["created"]
    argv = [
        sys.executable, "-m", "advisor.cli.main", "--runs-dir", str(runs), "scale",
        "--sweep-id", sweep_id, "--resume", "--no-report",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "keeping 1 finished configuration(s), running 1 again" in done.stderr
    assert "rerun single ×1 repeat 0 (preempted: its run was terminated" in done.stderr
    record = read_sweep(sweep_dir(runs, sweep_id))
    assert [c.status for c in record.configs] == ["finished", "finished"]
    rerun = record.configs[0]
    (attempt,) = rerun.attempts
    assert attempt.status == "failed" and attempt.reason.startswith("preempted:")
    assert RunReader(Path(attempt.moved_to)).read().status == "terminated"  # set aside, kept
    assert RunReader(runs / rerun.run_id).read().status == "finished"
    assert json.loads((kept / "run.json").read_text())["created"] == kept_created  # not rerun
    assert record.resumed[0].kept == [f"{sweep_id}-single-n2-r0"]
    assert record.resumed[0].rerun == [rerun.run_id]
    table = RunService(runs).scaling_table(sweep_id)
    assert [(r.workers, r.runs) for r in table.rows] == [(1, 1), (2, 1)]
    assert table.failures == [] and all(r.epoch_s is not None for r in table.rows)


def _sigterm_like_a_ray_node(seconds: float, timed_out: bool):
    """A runner at the Ray boundary (no Ray cluster here): it starts the configuration's real
    training process, sends it SIGTERM after its first window, and reports what Ray's runner
    reports when the worker's actor is gone with it: a failure with no exit code (or, with
    ``timed_out``, the launcher's own timeout, whose SIGTERM is no preemption)."""

    def run(config, specs, log_dir, timeout_s, on_tick) -> Outcome:
        (spec,) = specs(gpus=0)
        assert isinstance(spec, ProcessSpec)
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / spec.log_name, "wb") as log:
            proc = subprocess.Popen(spec.argv, env=merged_env(spec.env), stdout=log, stderr=log)
        run_dir = Path(spec.env["ADVISOR_RUNS_DIR"]) / spec.env["ADVISOR_RUN_ID"]
        deadline = time.monotonic() + 240
        while not _trained_a_window(run_dir / "worker-0.jsonl"):
            assert proc.poll() is None and time.monotonic() < deadline, "no window trained"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        if timed_out:
            return Outcome("failed", seconds, "timed out after 1 s", returncodes={0: None},
                           timed_out=True)  # fmt: skip
        return Outcome(
            "failed", seconds, "worker 0's Ray actor died: the actor died unexpectedly",
            returncodes={0: None},
        )  # fmt: skip

    return run


@pytest.mark.parametrize("timed_out", [False, True], ids=["actor-gone", "timeout"])
def test_a_worker_stopped_without_an_exit_code_is_preempted_by_its_runs_status(tmp_path, timed_out):
    train = tmp_path / "train.py"
    train.write_text(TRAIN.replace("LONG", '"-r0"'), encoding="utf-8")
    plan = make_plan(
        [sys.executable, str(train), str(tmp_path / "marker")], [1], ["single"], sweep_id="ray"
    )
    runs = tmp_path / "runs"
    (rec,) = run_sweep(plan, runs, runner=_sigterm_like_a_ray_node(3.0, timed_out)).configs
    assert RunReader(runs / rec.run_id).read().status == "terminated"
    assert rec.status == "failed"
    if timed_out:
        assert rec.reason == "timed out after 1 s"
    else:
        assert rec.reason.startswith("preempted: its run was terminated (SIGTERM) at ")
        assert "(worker 0's Ray actor died" in rec.reason


def _trained_a_window(path: Path) -> bool:
    try:
        return any(
            json.loads(line).get("type") == "window" for line in path.read_text().splitlines()
        )
    except (OSError, ValueError):
        return False
