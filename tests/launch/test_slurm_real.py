"""`advisor scale --launcher slurm` on a real Slurm 22.05 cluster of this host (two node daemons,
tests/launch/conftest.py): a 1- and 2-worker multiworker (and jax) sweep runs to completion, each
job after the other, on a CPU partition asked for no GPUs; the job ids are in the sweep and in the
runs; `advisor report` has both rows; a job cancelled with scancel is failed with Slurm's reason."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from stragglers import assert_healthy_workers

from advisor.service import RunService
from advisor.store.reader import RunReader
from advisor.store.schema import StartRecord
from advisor.store.sweep import read_sweep, sweep_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras"),
]

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "scaling" / "train.py")
TINY = ["--epochs", "2", "--samples", "1024", "--hidden", "32", "--batch-per-replica", "32"]
SWEEP, CANCEL = (f"{name}{os.getpid()}" for name in ("slurm", "scancel"))
STRATEGIES = ["multiworker"] + (["jax"] if importlib.util.find_spec("jax") else [])


def _cli(runs_dir: Path, *args: str):
    from advisor.cli.main import cli

    return CliRunner().invoke(cli, ["--runs-dir", str(runs_dir), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def sweep(slurm_cluster, tmp_path_factory):
    runs = tmp_path_factory.mktemp("slurm-sweep") / "runs"
    strategies = [arg for s in STRATEGIES for arg in ("--strategy", s)]
    result = _cli(
        runs,
        "scale",
        "--launcher",
        "slurm",
        "--wait",
        "--workers",
        "1,2",
        *strategies,
        "--timeout",
        "120",
        "--sweep-id",
        SWEEP,
        "--",
        sys.executable,
        TRAIN,
        *TINY,
    )
    return runs, result


def test_the_sweep_runs_to_completion_one_job_after_the_other(sweep, slurm_cluster):
    runs, result = sweep
    record = read_sweep(sweep_dir(runs, SWEEP))
    failed = {c.run_id: (c.reason, c.log_tail) for c in record.configs if c.status != "finished"}
    assert failed == {}, failed
    assert result.exit_code == 0, result.output
    assert [(c.strategy, c.workers) for c in record.configs] == [
        (s, n) for s in STRATEGIES for n in (1, 2)
    ]
    jobs = [c.job_id for c in record.configs]
    assert all(jobs) and len(set(jobs)) == len(jobs)
    assert [c.nodes for c in record.configs[:2]] == [
        ["n1"],
        ["n1", "n2"],
    ]  # two workers span two nodes
    assert f"submitted job {jobs[1]}" in result.stdout
    assert f"Scaling report — sweep {SWEEP}" in result.stdout
    for rec in record.configs:
        script = Path(rec.script).read_text()
        assert (
            "--gpus" not in script and "29400" not in script
        )  # a CPU partition; ports from the job id
    # chained (afterany): each job started after the one before it had ended, never side by side
    spans = [_start_end(slurm_cluster, job) for job in jobs]
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))


def _start_end(cluster, job_id: str) -> tuple[float, float]:
    from advisor.launch.slurm_text import parse_scontrol

    fields = parse_scontrol(cluster.run("scontrol", "-o", "show", "job", job_id))
    return tuple(
        time.mktime(time.strptime(fields[k], "%Y-%m-%dT%H:%M:%S")) for k in ("StartTime", "EndTime")
    )


def test_each_run_records_its_job_and_nodes(sweep):
    runs, _ = sweep
    for rec in read_sweep(sweep_dir(runs, SWEEP)).configs:
        run = RunReader(runs / rec.run_id).read()
        assert run.status == "finished" and len(run.ranks) == rec.workers
        assert run.manifest.tags["slurm.job_id"] == rec.job_id
        assert run.manifest.tags["slurm.nodes"] == ",".join(rec.nodes)
        # each rank's own Slurm node in its records (what names a straggler)
        assert sorted(s.node for s in run.of_type(StartRecord)) == rec.nodes


def test_the_report_shows_both_rows(sweep):
    runs, _ = sweep
    result = _cli(runs, "report", SWEEP, "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = [line.split(",")[:2] for line in result.stdout.splitlines()[1:] if line]
    assert rows == [[s, str(n)] for s in STRATEGIES for n in (1, 2)]
    # Healthy two-node runs: measured, far from a deliberate straggler, named exactly where D651
    # fails (a shared host can really slow one rank: tests/support/stragglers.py).
    table = RunService(runs).scaling_table(SWEEP)
    for strategy in STRATEGIES:
        assert_healthy_workers(table.row(strategy, 2), table.findings)


def test_a_cancelled_job_fails_with_slurms_reason(slurm_cluster, tmp_path):
    runs = tmp_path / "runs"

    def cancel_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out = slurm_cluster.run(
                "squeue", "-h", "-t", "RUNNING", "-n", "advisor-single-n1-r0", "-o", "%i"
            )
            if out.strip():
                slurm_cluster.run("scancel", out.split()[0])
                return
            time.sleep(0.3)

    canceller = threading.Thread(target=cancel_when_running)
    canceller.start()
    result = _cli(
        runs,
        "scale",
        "--launcher",
        "slurm",
        "--wait",
        "--workers",
        "1",
        "--strategy",
        "single",
        "--timeout",
        "60",
        "--sweep-id",
        CANCEL,
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(50)",
    )
    canceller.join()
    (rec,) = read_sweep(sweep_dir(runs, CANCEL)).configs
    assert rec.status == "failed" and rec.reason.startswith(f"Slurm job {rec.job_id} CANCELLED"), (
        rec.reason
    )
    assert result.exit_code == 1 and "CANCELLED" in result.stderr


def test_horovod_is_refused_up_front_where_pmix_does_not_load(slurm_cluster, tmp_path):
    """Debian's Slurm 22.05 lists pmix in `srun --mpi=list` but cannot load its library: the sweep
    is refused before anything is written or submitted, with Slurm's reason, exit 2."""
    from advisor.launch.slurm import pmix_refusal

    if pmix_refusal() is None:
        pytest.skip("this Slurm starts srun --mpi=pmix steps: nothing to refuse")
    runs = tmp_path / "runs"
    result = _cli(
        runs,
        "scale",
        "--launcher",
        "slurm",
        "--wait",
        "--workers",
        "1,2",
        "--strategy",
        "horovod",
        "--sweep-id",
        f"hvd{os.getpid()}",
        "--",
        sys.executable,
        TRAIN,
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert (
        "srun --mpi=pmix" in line
        and "Invalid MPI type 'pmix'" in line
        and "--launcher local" in line
    )
    assert not runs.exists() or not any(runs.iterdir())


# -- partitions, jobs that can never start, preemption ----------------------------------------


def test_a_one_node_partition_runs_the_default_sweep_packed(slurm_cluster, tmp_path):
    """Partition `one` has a single node: the 2-worker job is laid out as 2 tasks on it (and says
    so), not as a 2-node job Slurm would keep pending for ever."""
    runs = tmp_path / "runs"
    sweep_id = f"one{os.getpid()}"
    result = _cli(
        runs, "scale", "--launcher", "slurm", "--partition", "one", "--wait", "--workers", "1,2",
        "--timeout", "120", "--sweep-id", sweep_id, "--no-report", "--", sys.executable, TRAIN,
        *TINY,
    )  # fmt: skip
    record = read_sweep(sweep_dir(runs, sweep_id))
    assert [(c.status, c.nodes) for c in record.configs] == [
        ("finished", ["n1"]),
        ("finished", ["n1"]),
    ], [(c.reason, c.log_tail) for c in record.configs]
    assert result.exit_code == 0, result.output
    assert record.configs[1].layout == "2 tasks on 1 node (packed: partition one has 1 node)"
    assert "(2 tasks on 1 node (packed: partition one has 1 node);" in result.stdout
    assert "#SBATCH --nodes=1" in Path(record.configs[1].script).read_text()


def test_a_job_that_can_never_start_fails_at_once_and_the_sweep_goes_on(slurm_cluster, tmp_path):
    """With one task per node asked for, the 2-worker job needs 2 nodes of a 1-node partition:
    Slurm keeps it pending (PartitionNodeLimit, or PartitionConfig); it is cancelled and failed
    with that reason and the fix, and the configuration after it still runs."""
    runs = tmp_path / "runs"
    sweep_id = f"never{os.getpid()}"
    result = _cli(
        runs, "scale", "--launcher", "slurm", "--partition", "one", "--tasks-per-node", "1",
        "--wait", "--workers", "2", "--strategy", "multiworker", "--strategy", "single",
        "--timeout", "600", "--sweep-id", sweep_id, "--no-report", "--", sys.executable, TRAIN,
        *TINY,
    )  # fmt: skip
    never, single = read_sweep(sweep_dir(runs, sweep_id)).configs
    # Slurm 22.05 says PartitionConfig or PartitionNodeLimit for this job (by when it looks)
    assert never.status == "failed" and re.match(
        rf"Slurm job {never.job_id} could not start: pending for Partition(NodeLimit|Config),",
        never.reason,
    ), never.reason
    assert "--tasks-per-node" in never.reason and "cancelled" in never.reason
    assert slurm_cluster.run("squeue", "-h", "-j", never.job_id).strip() == ""  # not left queued
    assert single.status == "finished", (single.reason, single.log_tail)
    assert result.exit_code == 1 and f"Slurm job {never.job_id} could not start" in result.stderr


def test_nodes_the_partition_lacks_fail_with_slurms_reason(slurm_cluster, tmp_path):
    """`--sbatch-arg=--nodes=5` on a 2-node partition: kept as the user's node count (sbatch would
    shrink it to the task count), so Slurm can never start the job (PartitionConfig)."""
    runs = tmp_path / "runs"
    sweep_id = f"five{os.getpid()}"
    result = _cli(
        runs, "scale", "--launcher", "slurm", "--wait", "--workers", "1,2", "--strategy",
        "multiworker", "--sbatch-arg=--nodes=5", "--timeout", "600", "--sweep-id", sweep_id,
        "--", sys.executable, TRAIN, *TINY,
    )  # fmt: skip
    records = read_sweep(sweep_dir(runs, sweep_id)).configs
    for rec in records:
        assert rec.status == "failed" and "could not start: pending for PartitionConfig" in (
            rec.reason or ""
        ), rec.reason
        assert rec.layout.endswith("on 5 nodes (--nodes=5 from --sbatch-arg)")
    assert result.exit_code == 1


def test_scancel_signal_term_reads_as_terminated(slurm_cluster, tmp_path):
    """A real Slurm job told to stop (`scancel --signal=TERM`, what preemption sends) while it
    trains: its run is `terminated (SIGTERM)`, not killed, and the sweep says it was preempted;
    `--resume` submits it again and measures it."""
    runs = tmp_path / "runs"
    sweep_id = f"term{os.getpid()}"
    run_file = runs / f"{sweep_id}-single-n1-r0" / "worker-0.jsonl"

    def terminate_when_training() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if run_file.is_file() and '"type":"window"' in run_file.read_text().replace(" ", ""):
                job = slurm_cluster.run("squeue", "-h", "-n", "advisor-single-n1-r0", "-o", "%i")
                slurm_cluster.run("scancel", "--signal=TERM", job.split()[0])
                return
            time.sleep(0.3)

    signaller = threading.Thread(target=terminate_when_training)
    signaller.start()
    result = _cli(
        runs, "scale", "--launcher", "slurm", "--wait", "--workers", "1", "--strategy", "single",
        "--timeout", "300", "--sweep-id", sweep_id, "--no-report", "--", sys.executable, TRAIN,
        "--epochs", "200", "--samples", "1024", "--hidden", "32", "--batch-per-replica", "32",
    )  # fmt: skip
    signaller.join()
    (rec,) = read_sweep(sweep_dir(runs, sweep_id)).configs
    run = RunReader(runs / rec.run_id).read()
    assert (run.status, run.manifest.signal) == ("terminated", "SIGTERM")
    assert rec.status == "failed" and rec.reason.startswith(
        "preempted: its run was terminated (SIGTERM) at "
    ), rec.reason
    listed = _cli(runs, "runs")
    assert "terminated (SIGTERM)" in listed.stdout and "killed" not in listed.stdout
    assert result.exit_code == 1
    # Resumed (a short fit this time): the preempted configuration is submitted again and measured.
    resumed = _cli(
        runs, "scale", "--launcher", "slurm", "--wait", "--sweep-id", sweep_id, "--resume",
        "--timeout", "300", "--no-report", "--", sys.executable, TRAIN, *TINY,
    )  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    (rec,) = read_sweep(sweep_dir(runs, sweep_id)).configs
    assert rec.status == "finished" and rec.attempts[0].reason.startswith("preempted:")
    assert RunReader(runs / rec.run_id).read().status == "finished"
    assert [r.workers for r in RunService(runs).scaling_table(sweep_id).rows] == [1]


def test_a_failing_slurm_sweep_leaves_no_secret_in_the_store(slurm_cluster, tmp_path, monkeypatch):
    """The job's script reads the command line's secrets from variables sbatch passes on, and its
    log reaches the store through the redacting pipe: neither the secret argument nor the secret
    variable is in any file of the store, and the script still ran the real command."""
    runs = tmp_path / "runs"
    sweep_id = f"secret{os.getpid()}"
    api_key, password = "sk-" + "Qw3" * 10, "correct-horse-battery-staple"
    monkeypatch.setenv("SERVICE_PASSWORD", password)
    train = tmp_path / "train.py"
    train.write_text(
        "import argparse, os\n"
        "print('password', os.environ['SERVICE_PASSWORD'], flush=True)\n"
        "argparse.ArgumentParser().parse_args()\n",
        encoding="utf-8",
    )
    result = _cli(
        runs, "scale", "--launcher", "slurm", "--wait", "--workers", "2", "--strategy", "jax",
        "--timeout", "60", "--sweep-id", sweep_id, "--no-report", "--", sys.executable,
        str(train), f"--api-key={api_key}",
    )  # fmt: skip
    (rec,) = read_sweep(sweep_dir(runs, sweep_id)).configs
    assert result.exit_code == 1 and rec.status == "failed", rec.reason
    log = Path(rec.logs[0]).read_text(encoding="utf-8")
    assert "unrecognized arguments: --api-key=***" in log and "password ***" in log, log
    assert '--api-key="${ADVISOR_SECRET_0}"' in Path(rec.script).read_text()
    files = [p for p in runs.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        assert api_key.encode() not in data and password.encode() not in data, path
