"""The Slurm launcher without a cluster: scripts for CPU partitions, ports from the job id, the
task layout from Slurm's own counts, job states from sacct / scontrol / squeue / exit files, and
following a job to its end (a fake clock, fake Slurm commands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.launch.plan import Config
from advisor.launch.role import role
from advisor.launch.slurm import SlurmOptions, sbatch_script
from advisor.launch.slurm_jobs import follow, job_state
from advisor.launch.slurm_text import gpus_in_gres, parse_scontrol
from advisor.launch.task import port_base, task_env, tasks_per_node

CMD = ["python", "train.py"]


def _script(config: Config, **options) -> str:
    return sbatch_script(
        config, CMD, "s", Path("/r"), Path("/logs"), options=SlurmOptions(**options)
    )


def test_a_cpu_partition_is_asked_for_no_gpus():
    text = _script(Config("multiworker", 2), gpus_per_node=0)
    assert "--gpus" not in text
    assert (
        "#SBATCH --nodes=2" in text and "#SBATCH --ntasks-per-node=1" in text
    )  # one task per node
    packed = _script(Config("jax", 4), gpus_per_node=0, tasks_per_node=2)
    assert "#SBATCH --nodes=2" in packed and "#SBATCH --ntasks-per-node=2" in packed
    mirrored = _script(Config("mirrored", 8), gpus_per_node=0)  # logical CPU devices: no GPU limit
    assert "--gpus" not in mirrored and "ADVISOR_LOGICAL_DEVICES=8" in mirrored


def test_the_script_records_its_exit_and_resolves_node_addresses():
    text = _script(Config("multiworker", 2), gpus_per_node=0)
    assert "ADVISOR_PORT_BASE" not in text and "NodeAddr=" in text
    assert 'echo "$code" > /logs/exit-"$SLURM_JOB_ID"' in text and text.endswith('exit "$code"\n')
    assert "ADVISOR_PORT_BASE=5000" in _script(Config("jax", 2), port_base=5000)


@pytest.mark.parametrize(
    "gres,gpus",
    [
        ("(null)\n", 0),
        ("gpu:4\n(null)\n", 4),
        ("gpu:a100:8(S:0-1)\n", 8),
        ("gpu:2,shard:8\n", 2),
        ("", 0),
    ],
)
def test_gpus_from_sinfo(gres, gpus):
    assert gpus_in_gres(gres) == gpus


def test_ports_come_from_the_job_id():
    a, b = port_base({"SLURM_JOB_ID": "41"}), port_base({"SLURM_JOB_ID": "42"})
    assert b - a == 16 and 10000 <= a < 32768
    assert port_base({"SLURM_JOB_ID": str(10**9)}, ntasks=64) + 64 <= 32768
    assert port_base({"SLURM_JOB_ID": "42", "ADVISOR_PORT_BASE": "7000"}) == 7000


def test_the_layout_follows_slurms_task_counts():
    assert tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    env = {
        "SLURM_PROCID": "2",
        "SLURM_NTASKS": "3",
        "SLURM_JOB_ID": "1",
        "SLURM_STEP_TASKS_PER_NODE": "1,2",
        "ADVISOR_SLURM_HOSTS": "10.0.0.1,10.0.0.2",
        "ADVISOR_TASKS_PER_NODE": "2",
        "ADVISOR_SCALE_STRATEGY": "multiworker",
    }
    workers = json.loads(task_env(env)["TF_CONFIG"])["cluster"]["worker"]
    assert workers == ["10.0.0.1:10016", "10.0.0.2:10017", "10.0.0.2:10018"]


def test_the_role_tags_the_job():
    tags = role(
        {"SLURM_JOB_ID": "17", "ADVISOR_SLURM_NODES": "n1,n2", "ADVISOR_SCALE_STRATEGY": "jax"}
    ).tags()
    assert tags["slurm.job_id"] == "17" and tags["slurm.nodes"] == "n1,n2"
    assert "slurm.job_id" not in role({}).tags()


def fake_slurm(answers: dict[str, str | None]):
    """A runner answering by command name (None: the command fails or is missing)."""

    def run(argv):
        if argv[:2] == ["scontrol", "show"] and argv[2] == "hostnames":
            return argv[3].replace(",", "\n")
        return answers.get(argv[0])

    return run


def test_states_from_each_source(tmp_path):
    sacct = fake_slurm({"sacct": "7|CANCELLED by 0|0:15|n1,n2|75|None\n"})
    state = job_state("7", run=sacct)
    assert (state.state, state.signal, state.nodes, state.source) == (
        "CANCELLED",
        15,
        ["n1", "n2"],
        "sacct",
    )
    assert state.seconds == 75
    assert state.describe("7") == "Slurm job 7 CANCELLED, signal 15"
    line = (
        "JobId=7 JobName=x JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=1:0 "
        "RunTime=1-00:01:02 NodeList=n1"
    )
    state = job_state("7", run=fake_slurm({"sacct": None, "scontrol": line}))
    assert state.describe(
        "7"
    ) == "Slurm job 7 FAILED, exit code 1 (NonZeroExitCode)" and state.nodes == ["n1"]
    assert state.seconds == 86400 + 62
    assert parse_scontrol(line)["Dependency"] == "(null)"
    queued = job_state("7", tmp_path, fake_slurm({"squeue": "PENDING|Dependency|\n"}))
    assert queued.active and not queued.started and queued.reason == "Dependency"
    gone = job_state("7", tmp_path, fake_slurm({"squeue": ""}))
    assert gone.state == "UNKNOWN" and not gone.active and "exit file" in gone.reason
    (tmp_path / "exit-7").write_text("0\n")
    assert job_state("7", tmp_path, fake_slurm({"squeue": ""})).succeeded


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_follow_a_job_from_the_queue_to_its_end():
    states = iter(["PENDING|Dependency|", "RUNNING|None|n1", "RUNNING|None|n1"])
    run = lambda argv: next(states, "") if argv[0] == "squeue" else None  # noqa: E731
    clock, seen = FakeClock(), []
    ended = follow(
        "3",
        None,
        on_start=lambda s: seen.append(s.state),
        on_tick=seen.append,
        poll_s=1.0,
        run=run,
        clock=clock,
        sleep=clock.sleep,
    )
    assert seen == ["RUNNING", 0.0, 1.0] and ended.seconds == 2.0 and ended.state.state == "UNKNOWN"


def test_follow_cancels_a_job_past_its_timeout():
    calls = []

    def run(argv):
        calls.append(argv[0])
        return "RUNNING|None|n1" if argv[0] == "squeue" else None

    clock = FakeClock()
    ended = follow("3", None, timeout_s=5, poll_s=1.0, run=run, clock=clock, sleep=clock.sleep)
    assert ended.timed_out and ended.seconds == 6.0 and calls[-1] == "scancel"


def _sweep_of(tmp_path, *configs):
    from advisor.store.sweep import ConfigRecord, SweepRecord, write_sweep

    record = SweepRecord(
        sweep_id="sl",
        launcher="slurm",
        configs=[
            ConfigRecord(strategy=s, workers=n, run_id=f"sl-{s}-n{n}-r0", status=status, job_id=job)
            for s, n, status, job in configs
        ],
    )
    write_sweep(tmp_path, record)
    return record


def test_a_rank_whose_records_stayed_on_its_node_fails_the_configuration(tmp_path, monkeypatch):
    from advisor.launch import slurm_jobs
    from advisor.launch.sweep import follow_sweep

    record = _sweep_of(tmp_path, ("multiworker", 2, "submitted", "5"))
    run = tmp_path / "sl-multiworker-n2-r0"
    run.mkdir()
    (run / "run.json").write_text("{}")
    (run / "worker-0.jsonl").write_text("")
    ended = slurm_jobs.Ended(
        slurm_jobs.JobState("COMPLETED", 0, nodes=["n1", "n2"], seconds=12.0), 11.5
    )
    monkeypatch.setattr(slurm_jobs, "follow", lambda *a, **k: ended)
    (rec,) = follow_sweep(record, tmp_path, 60).configs
    assert rec.status == "failed" and rec.seconds == 12.0 and rec.nodes == ["n1", "n2"]
    assert (
        "lacks the records of rank(s) 1" in rec.reason
        and "shared with every node (n1, n2)" in rec.reason
    )
    (run / "worker-1.jsonl").write_text("")
    rec.status = "submitted"
    assert follow_sweep(record, tmp_path, 60).configs[0].status == "finished"


def test_the_report_names_configurations_not_ended(tmp_path):
    from advisor.render.scaling import render_table
    from advisor.service import RunService

    _sweep_of(tmp_path, ("jax", 1, "failed", "3"), ("jax", 2, "submitted", "4"))
    table = RunService(tmp_path).scaling_table("sl")
    assert [(f.workers, f.state, f.reason) for f in table.failures] == [
        (1, "failed", None),
        (2, "submitted", "Slurm job 4 submitted: no run yet"),
    ]
    text = render_table(table, "md")
    assert (
        "## Failed or unfinished configurations" in text
        and "Slurm job 4 submitted: no run yet" in text
    )


def test_a_cluster_without_pmix_gets_a_hint_for_horovod():
    from advisor.launch.hints import hint_for

    tail = "srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types"
    assert "libpmix2" in hint_for(tail) and "multiworker or jax" in hint_for(tail)


def test_the_cluster_script_says_what_to_install(tmp_path):
    import shutil
    import subprocess

    script = Path(__file__).resolve().parents[2] / "scripts" / "slurm_cluster.sh"
    done = subprocess.run(
        [shutil.which("bash"), str(script), "start", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
        timeout=30,
    )  # no Slurm on this PATH
    assert done.returncode == 1 and "apt-get install -y slurm-wlm munge" in done.stderr
    assert not (tmp_path / "c").exists()
