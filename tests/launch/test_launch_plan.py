"""Sweep planning and command construction: local strategies, Horovod, Slurm (no processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import RunFormatError, UsageError
from advisor.launch import role
from advisor.launch.hints import hint_for
from advisor.launch.horovod import horovodrun_argv
from advisor.launch.plan import (
    Config,
    check_available,
    local_processes,
    make_plan,
    merged_env,
    parse_workers,
)
from advisor.launch.slurm import SlurmOptions, sbatch_script
from advisor.launch.task import task_env
from advisor.probes.distributed import detect_rank_world
from advisor.store.sweep import read_sweep

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "scaling"
CMD = ["python", "train.py", "--epochs", "2"]


def test_plan_order_and_ids():
    plan = make_plan(CMD, [1, 2], ["mirrored", "jax"], repeat=2, sweep_id="sw")
    assert [c.label for c in plan.configs[:4]] == [
        "mirrored-n1-r0",
        "mirrored-n2-r0",
        "jax-n1-r0",
        "jax-n2-r0",
    ]
    assert len(plan.configs) == 8 and plan.configs[4].repeat == 1
    assert plan.configs[0].run_id("sw") == "sw-mirrored-n1-r0"


@pytest.mark.parametrize("text", ["", "a,b", "0,1", "-2"])
def test_bad_worker_lists(text):
    with pytest.raises(UsageError):
        parse_workers(text)


def test_worker_list_is_sorted_and_unique():
    assert parse_workers("4,1,2,2") == [1, 2, 4]


def test_unknown_strategy_and_empty_command():
    with pytest.raises(UsageError, match="unknown strategy"):
        make_plan(CMD, [1], ["ddp"])
    with pytest.raises(UsageError, match="no training command"):
        make_plan([], [1], ["mirrored"])


def test_multiworker_processes_get_tf_config_and_tf_keras(tmp_path):
    specs = local_processes(Config("multiworker", 2), CMD, "sw", tmp_path, ports=[5001, 5002])
    assert [s.rank for s in specs] == [0, 1] and all(s.argv == CMD for s in specs)
    for rank, spec in enumerate(specs):
        cfg = json.loads(spec.env["TF_CONFIG"])
        assert cfg == {
            "cluster": {"worker": ["127.0.0.1:5001", "127.0.0.1:5002"]},
            "task": {"type": "worker", "index": rank},
        }
        assert (
            spec.env["TF_USE_LEGACY_KERAS"] == "1"
            and spec.env["ADVISOR_RUN_ID"] == "sw-multiworker-n2-r0"
        )
        assert detect_rank_world(spec.env) == (rank, 2)
        r = role(spec.env)
        assert (r.strategy, r.workers, r.rank, r.legacy_keras) == ("multiworker", 2, rank, True)


def test_jax_processes_share_a_coordinator(tmp_path):
    specs = local_processes(Config("jax", 3), CMD, "sw", tmp_path, ports=[7000])
    assert {s.env["ADVISOR_COORDINATOR"] for s in specs} == {"127.0.0.1:7000"}
    assert all(s.env["KERAS_BACKEND"] == "jax" and "TF_CONFIG" not in s.env for s in specs)
    r = role(specs[2].env)
    assert (r.rank, r.processes, r.shard(9)) == (2, 3, slice(2, 9, 3))


def test_mirrored_is_one_process_with_n_devices(tmp_path):
    (spec,) = local_processes(Config("mirrored", 4), CMD, "sw", tmp_path)
    assert spec.env["ADVISOR_LOGICAL_DEVICES"] == "4" and "CUDA_VISIBLE_DEVICES" not in spec.env
    r = role(spec.env)
    assert (r.strategy, r.workers, r.logical_devices, r.processes, r.legacy_keras) == (
        "mirrored",
        4,
        4,
        1,
        False,
    )
    (gpu_spec,) = local_processes(Config("mirrored", 2), CMD, "sw", tmp_path, gpus=8)
    assert gpu_spec.env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_launcher_owned_variables_are_not_inherited():
    env = merged_env(
        {"ADVISOR_RANK": "1"}, parent={"TF_CONFIG": "stale", "PATH": "/bin", "KERAS_BACKEND": "jax"}
    )
    assert env == {"PATH": "/bin", "ADVISOR_RANK": "1"}


def test_horovod_command_construction(tmp_path):
    assert horovodrun_argv(4, CMD) == [
        "horovodrun",
        "-np",
        "4",
        "-H",
        "localhost:4",
        "--gloo",
        *CMD,
    ]
    assert horovodrun_argv(8, CMD, hosts="a:4,b:4", gloo=False, timeline="/t.json") == [
        "horovodrun",
        "-np",
        "8",
        "-H",
        "a:4,b:4",
        "--timeline-filename",
        "/t.json",
        *CMD,
    ]
    (spec,) = local_processes(Config("horovod", 2), CMD, "sw", tmp_path)
    assert spec.argv[:6] == ["horovodrun", "-np", "2", "-H", "localhost:2", "--gloo"]
    # The timeline goes to the sweep's folder; the sweep attaches it to the run when it ends.
    assert spec.argv[6:8] == [
        "--timeline-filename",
        str(tmp_path / "sweeps" / "sw" / "timelines" / "horovod-n2-r0.json"),
    ]
    assert spec.env["TF_USE_LEGACY_KERAS"] == "1" and "ADVISOR_RANK" not in spec.env


def test_horovod_rank_detection_without_horovod():
    assert detect_rank_world({"HOROVOD_RANK": "3", "HOROVOD_SIZE": "4"}) == (3, 4)
    assert detect_rank_world({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}) == (1, 2)
    r = role(
        {
            "ADVISOR_SCALE_STRATEGY": "horovod",
            "ADVISOR_SCALE_WORKERS": "4",
            "HOROVOD_RANK": "2",
            "HOROVOD_SIZE": "4",
        }
    )
    assert (r.rank, r.processes, r.legacy_keras, r.shard(8)) == (2, 4, True, slice(2, 8, 4))


def test_missing_horovod_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UsageError, match="horovodrun.*not on PATH"):
        check_available(["mirrored", "horovod"])
    check_available(["horovod"], launcher="slurm")  # the cluster may have it


@pytest.mark.parametrize(
    "name,config,kwargs",
    [
        (
            "multiworker-n6.sbatch",
            Config("multiworker", 6, 0),
            {
                "command": ["python", "train.py", "--epochs", "3", "--name", "a b"],
                "log_dir": Path("/shared/runs/sweeps/sweep-golden/logs/multiworker-n6-r0"),
                "timeout_s": 900,
                "options": SlurmOptions(gpus_per_node=4, partition="gpu", extra=["--exclusive"]),
                "instance_type": "p3.8xlarge",
            },
        ),
        (
            "mirrored-n4.sbatch",
            Config("mirrored", 4, 1),
            {"command": ["python3", "train.py"], "log_dir": Path("/logs"), "timeout_s": None},
        ),
    ],
)
def test_slurm_script_golden(name, config, kwargs):
    text = sbatch_script(config, sweep_id="sweep-golden", runs_dir=Path("/shared/runs"), **kwargs)
    assert text == (GOLDEN / name).read_text()


def test_slurm_mirrored_must_fit_one_node():
    with pytest.raises(UsageError, match="one node"):
        sbatch_script(
            Config("mirrored", 8),
            CMD,
            "s",
            Path("/r"),
            Path("/l"),
            options=SlurmOptions(gpus_per_node=4),
        )


def test_slurm_task_roles():
    env = {
        "SLURM_PROCID": "5",
        "SLURM_NTASKS": "6",
        "ADVISOR_SLURM_HOSTS": "n1,n2",
        "ADVISOR_TASKS_PER_NODE": "4",
        "ADVISOR_SCALE_STRATEGY": "multiworker",
        "ADVISOR_PORT_BASE": "3000",
    }
    out = task_env(env)
    cfg = json.loads(out["TF_CONFIG"])
    # one port per rank: two node daemons of one host (a test cluster) share its address
    assert cfg["cluster"]["worker"] == [
        "n1:3000",
        "n1:3001",
        "n1:3002",
        "n1:3003",
        "n2:3004",
        "n2:3005",
    ]
    assert cfg["task"]["index"] == 5 and (out["ADVISOR_RANK"], out["ADVISOR_WORLD_SIZE"]) == (
        "5",
        "6",
    )
    jax = task_env({**env, "ADVISOR_SCALE_STRATEGY": "jax", "SLURM_PROCID": "0"})
    assert jax["ADVISOR_COORDINATOR"] == "n1:3000" and "TF_CONFIG" not in jax


def test_cli_slurm_writes_scripts_without_sbatch(tmp_path, monkeypatch):
    from advisor.cli.main import cli

    monkeypatch.setenv("PATH", "/nonexistent")
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(tmp_path),
            "scale",
            "--launcher",
            "slurm",
            "--workers",
            "1,2",
            "--strategy",
            "jax",
            "--sweep-id",
            "sl",
            "--",
            "python",
            "train.py",
        ],
    )
    assert result.exit_code == 0, result.output
    scripts = sorted((tmp_path / "sweeps" / "sl" / "slurm").glob("*.sbatch"))
    assert [p.name for p in scripts] == ["jax-n1-r0.sbatch", "jax-n2-r0.sbatch"]
    assert str(scripts[0]) in result.stdout and "sbatch is not installed" in result.stderr
    record = read_sweep(tmp_path / "sweeps" / "sl")
    assert [c.status for c in record.configs] == ["written", "written"]
    again = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(tmp_path),
            "scale",
            "--launcher",
            "slurm",
            "--sweep-id",
            "sl",
            "--",
            "python",
            "train.py",
        ],
    )
    assert again.exit_code == 2 and "sweep sl already exists" in again.stderr


def test_cli_scale_usage_errors(tmp_path):
    from advisor.cli.main import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["scale", "--workers", "x", "--", "python", "t.py"])
    assert result.exit_code == 2 and "--workers 'x'" in result.stderr
    result = runner.invoke(cli, ["scale", "--sweep-id", "../x", "--", "python", "t.py"])
    assert result.exit_code == 2 and "--sweep-id" in result.stderr


def test_hints_for_known_failures():
    assert "tf_keras" in hint_for("TypeError: ... PerReplica ... unsupported type")
    assert hint_for("Address already in use") is not None
    assert hint_for("all good") is None


def test_damaged_sweep_file_is_a_one_line_error(tmp_path):
    (tmp_path / "sweep.json").write_text("{not json")
    with pytest.raises(RunFormatError, match="sweep.json: unreadable sweep file"):
        read_sweep(tmp_path)
    (tmp_path / "sweep.json").write_text('{"schema_version": 1}')
    with pytest.raises(RunFormatError, match="invalid sweep file"):
        read_sweep(tmp_path)


def test_free_ports_are_free_distinct_and_below_the_ephemeral_range():
    """A worker binds its port seconds after the launcher chose it: chosen below the range the OS
    hands to outgoing connections, no connection can take it meanwhile. Real sockets."""
    import socket

    from advisor.launch import plan

    low, high = plan._listen_range()
    ports = plan.free_ports(6)
    assert len(set(ports)) == 6 and all(low <= p < high for p in ports)
    for port in ports:  # free: each binds
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
    # a port taken now is never chosen while it is held
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", ports[0]))
        held.listen()
        assert ports[0] not in {p for _ in range(20) for p in plan.free_ports(4)}
