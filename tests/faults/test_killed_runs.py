"""Processes that die: SIGKILL in the middle of a window, and one worker of a real two-process
fit (JAX over gloo, launched by `advisor scale`) killed mid-epoch. Each asserts what is kept, the
status shown and the exit code of `advisor check`."""

from __future__ import annotations

import importlib.util
import json
from itertools import pairwise

import pytest
from fault_helpers import cli

from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import EndRecord, EpochRecord, WindowRecord

pytestmark = pytest.mark.slow


def test_sigkill_mid_window(killed_mid_window):
    runs_dir, windows = (
        killed_mid_window  # killed mid-window after >= 5 windows (tests/conftest.py)
    )
    (run_dir,) = list_run_dirs(runs_dir)
    run = RunReader(run_dir).read()
    # Kept: every window written before the kill, contiguous, no torn or bad line.
    kept = run.of_type(WindowRecord)
    assert len(kept) >= windows and run.problems == [] and run.torn_lines == 0
    for before, after in pairwise(kept):
        assert after.step_begin == before.step_end
    # Shown: killed at once (the writer's process is gone on this machine), not "running".
    assert run.status == "killed" and run.of_type(EndRecord) == []
    listed = json.loads(cli("--runs-dir", str(runs_dir), "runs", "--format", "json").stdout)
    assert [r["status"] for r in listed] == ["killed"] and listed[0]["samples_per_s"] > 0
    # Not judged: exit 3 with the reason; --allow-incomplete judges what was kept.
    result = cli("check", str(run_dir))
    assert result.exit_code == 3 and "the run was killed" in result.output
    judged = cli("check", str(run_dir), "--allow-incomplete", "--format", "json")
    assert judged.exit_code in (0, 1)
    assert json.loads(judged.stdout)["incomplete"] == [
        "the run was killed: no end record, and its writer is gone"
    ]


@pytest.mark.cluster  # a two-process cluster on loopback: `-m cluster` (CI's own step) runs it
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (CPU)")
def test_a_worker_lost_in_a_two_process_fit(killed_worker_sweep):
    # JAX ×2 over gloo, worker 1 SIGKILLed at step 3 of epoch 1 (the sweep of tests/conftest.py)
    sweep_id, runs, scale = killed_worker_sweep
    assert scale.exit_code == 1, scale.output  # the sweep's own verdict: a configuration failed
    run = RunReader(runs / f"{sweep_id}-jax-n2-r0").read()
    assert run.ranks == [0, 1]
    # Kept: each worker's records up to its end — worker 1's from before its death at step 3.
    lost_worker = [type(r).__name__ for r in run.records[1]]
    assert lost_worker[0] == "StartRecord" and "ContextRecord" in lost_worker, lost_worker
    assert run.of_type(EndRecord, rank=1) == [] and run.of_type(EpochRecord, rank=1) == []
    assert run.of_type(WindowRecord, rank=0) and run.problems == []
    # Shown: the lost worker named, the run killed (the others' failure follows from it).
    assert run.workers[1].status == "killed" and run.status == "killed"
    result = cli("check", str(run.path))
    assert result.exit_code == 3
    assert any(
        line.strip().startswith("- worker") and "1" in line and "killed" in line
        for line in result.output.splitlines()
    ), result.output
