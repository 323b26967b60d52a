"""The local process-group runner with plain Python workers: success, a dying worker, a timeout,
and no process left behind (workers nor what they started)."""

from __future__ import annotations

import sys
import textwrap

import psutil
import pytest

from advisor.launch.local import run_local
from advisor.launch.plan import ProcessSpec

pytestmark = pytest.mark.slow  # trains a model or starts a process

# A worker that records its pid and its child's, then behaves as told by its argument.
WORKER = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    out, action = sys.argv[1], sys.argv[2]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(out, "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}")
    if action == "ok":
        child.kill(); child.wait(); print("done"); sys.exit(0)
    if action == "fail":
        time.sleep(0.5); print("Traceback: boom", flush=True); sys.exit(3)
    if action == "kill":
        time.sleep(0.5); os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(120)
""")


def _specs(tmp_path, actions):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return [
        ProcessSpec(
            [sys.executable, str(script), str(tmp_path / f"pids-{rank}"), action],
            {"ADVISOR_RANK": str(rank)},
            rank,
            f"worker-{rank}.log",
        )
        for rank, action in enumerate(actions)
    ]


def _pids(tmp_path, n):
    pids = []
    for rank in range(n):
        path = tmp_path / f"pids-{rank}"
        if path.exists() and path.read_text():
            pids += [int(p) for p in path.read_text().split()]
    return pids


def _gone(pids):
    assert len(pids) == 4, pids  # two workers and their children: else there is nothing to check
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def test_all_workers_finish(tmp_path):
    outcome = run_local(_specs(tmp_path, ["ok", "ok"]), tmp_path / "logs", timeout_s=60)
    assert outcome.status == "finished" and outcome.returncodes == {0: 0, 1: 0}
    assert (tmp_path / "logs" / "worker-1.log").read_text().strip() == "done"
    assert _gone(_pids(tmp_path, 2))


def test_a_failing_worker_fails_the_configuration_and_stops_the_others(tmp_path):
    outcome = run_local(_specs(tmp_path, ["sleep", "fail"]), tmp_path / "logs", timeout_s=60)
    assert outcome.status == "failed"
    assert outcome.reason == "worker 1 exited with code 3"
    assert "Traceback: boom" in outcome.log_tail
    assert _gone(_pids(tmp_path, 2))  # the sleeper and both grandchildren too


def test_a_killed_worker_is_named_with_its_signal(tmp_path):
    outcome = run_local(_specs(tmp_path, ["sleep", "kill"]), tmp_path / "logs", timeout_s=60)
    assert outcome.reason == "worker 1 was killed by SIGKILL"
    assert _gone(_pids(tmp_path, 2))


def test_timeout_kills_the_whole_group(tmp_path):
    ticks = []
    # 3 s: time for both workers to start and write their pids even on a busy host
    outcome = run_local(
        _specs(tmp_path, ["sleep", "sleep"]), tmp_path / "logs", timeout_s=3, on_tick=ticks.append
    )
    assert outcome.status == "failed" and outcome.reason.startswith("timed out after 3 s")
    assert "[0, 1]" in outcome.reason and ticks
    assert _gone(_pids(tmp_path, 2))


def test_a_command_that_cannot_start(tmp_path):
    spec = ProcessSpec(["/nonexistent/python"], {}, 0)
    outcome = run_local([spec], tmp_path / "logs", timeout_s=5)
    assert outcome.status == "failed" and "cannot start" in outcome.reason


def test_progress_display_reads_the_last_throughput(tmp_path, capsys):
    from scaling_fixtures import write_run

    from advisor.launch.progress import Display, last_throughput
    from advisor.store.sweep import ConfigRecord, SweepRecord

    runs = tmp_path / "runs"
    write_run(
        runs,
        "s-jax-n2-r0",
        sweep_id="s",
        strategy="jax",
        workers=2,
        ranks=2,
        manifest_strategy="DataParallel",
        epochs=[2.0, 1.0],
        samples_per_epoch=500,
        steps_per_epoch=5,
    )
    # jax: each process counts its share, so the job's rate is the sum; multiworker: one worker's.
    assert last_throughput(runs / "s-jax-n2-r0", "jax") == 1000.0
    assert last_throughput(runs / "s-jax-n2-r0", "multiworker") == 500.0
    assert last_throughput(runs / "missing", "jax") is None
    for live in (False, True):
        rec = ConfigRecord(strategy="jax", workers=2, run_id="s-jax-n2-r0")
        record = SweepRecord(sweep_id="s", configs=[rec])
        with Display(record, runs, live=live) as display:
            rec.status = "running"
            display.start(rec)
            display.tick(rec, 1.5)
            rec.status, rec.seconds, rec.reason = "failed", 2.0, "worker 1 exited with code 1"
            display.finish(rec)
        err = capsys.readouterr().err
        assert "jax ×2" in err and "failed" in err and "1,000" in err
