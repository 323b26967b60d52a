"""A real straggler: a 2-worker tf_keras MultiWorkerMirrored sweep on loopback in which rank 1
sleeps after every step (examples/scaling/train.py --slow-rank 1). `advisor report` names rank 1
and its host, with what it costs; D651 fails on it. The healthy 2-worker runs of
tests/launch/test_sweep_real.py are the other side: no straggler named there."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.store.sweep import read_sweep, sweep_dir

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras")

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "scaling" / "train.py")
TINY = ["--epochs", "2", "--samples", "1024", "--hidden", "32", "--batch-per-replica", "32"]
SLEEP_MS = 30.0  # about three times a step of this model here: decisive, far from the threshold
SWEEP = f"straggler{os.getpid()}"


def _cli(runs_dir: Path, *args: str):
    from advisor.cli.main import cli

    return CliRunner().invoke(cli, ["--runs-dir", str(runs_dir), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    runs = tmp_path_factory.mktemp("straggler") / "runs"
    result = _cli(runs, "scale", "--workers", "2", "--strategy", "multiworker", "--timeout", "120",
                  "--sweep-id", SWEEP, "--no-report", "--", sys.executable, TRAIN, *TINY,
                  "--slow-rank", "1", "--slow-ms", str(SLEEP_MS))
    (config,) = read_sweep(sweep_dir(runs, SWEEP)).configs
    assert config.status == "finished", (config.reason, config.log_tail)
    return runs, result


def test_the_report_names_the_slow_rank_and_its_cost(sweep):
    runs, _ = sweep
    result = _cli(runs, "report", SWEEP, "--format", "json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    (row,) = table["rows"]
    assert row["straggler"] == f"rank 1 on {socket.gethostname()}"
    assert row["straggler_rank"] == 1
    # rank 0 waits inside its steps for rank 1's sleep: most of every step
    assert row["straggler_share"] > 0.3
    assert row["straggler_wait_ms"] > SLEEP_MS / 2
    steps_per_epoch = 1024 // (32 * 2)
    assert row["straggler_s_per_epoch"] == pytest.approx(row["straggler_wait_ms"] / 1000 * steps_per_epoch)
    (finding,) = [f for f in table["findings"] if f["code"] == "D651"]
    assert finding["severity"] == "error" and finding["message"].startswith("rank 1 on ")
    assert finding["evidence"]["workers.straggler_consistent"] is True


def test_the_text_report_shows_it_in_the_workers_table(sweep):
    runs, _ = sweep
    result = _cli(runs, "report", SWEEP)
    assert result.exit_code == 0, result.output
    section = result.stdout.split("Workers: who the others wait for", 1)[1]
    assert f"rank 1 on {socket.gethostname()}" in section.splitlines()[2]
    assert "D651 stragglers (error) on multiworker ×2" in result.stdout


def test_check_fails_the_run_with_d651(sweep):
    runs, _ = sweep
    result = _cli(runs, "check", f"{SWEEP}-multiworker-n2-r0", "--select", "D651")
    assert result.exit_code == 1
    assert "is a straggler" in result.stdout and "s per epoch" in result.stdout


def test_a_run_whose_other_worker_files_stayed_on_their_node_is_flagged(sweep, tmp_path):
    """The same real run as a runs directory that never received rank 1's file (a node that does
    not share it): the report lists it as failed with the reason, and shows no row read from
    rank 0's share alone."""
    import shutil

    runs, _ = sweep
    lonely = tmp_path / "runs"
    run_id = f"{SWEEP}-multiworker-n2-r0"
    shutil.copytree(runs / run_id, lonely / run_id)
    (lonely / run_id / "worker-1.jsonl").unlink()
    result = _cli(lonely, "report", str(lonely), "--format", "json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert table["rows"] == []
    (failure,) = table["failures"]
    assert failure["run_id"] == run_id and "no records of rank(s) 1" in failure["reason"]
