"""`--launcher ray` without a cluster: the usage errors, and the role variables of workers whose
addresses Ray chose (the run itself: test_ray_real.py)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from advisor.launch.plan import Config, local_processes
from advisor.launch.ray_cluster import processes_of


def _scale(tmp_path: Path, *args: str):
    from advisor.cli.main import cli

    return CliRunner().invoke(cli, ["--runs-dir", str(tmp_path), "scale", *args])


def test_without_ray_the_launcher_is_a_one_line_usage_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    result = _scale(tmp_path, "--launcher", "ray", "--", "python", "train.py")
    assert result.exit_code == 2
    assert "keras-advisor[ray]" in result.stderr and "--launcher ray" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (tmp_path / "sweeps").exists()  # nothing started, nothing written


def test_address_belongs_to_the_ray_launcher(tmp_path):
    result = _scale(tmp_path, "--address", "auto", "--", "python", "train.py")
    assert result.exit_code == 2 and "--address is for --launcher ray" in result.stderr


def test_horovod_is_refused_under_ray(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", type(sys)("ray"))  # any module: Ray "installed"
    result = _scale(
        tmp_path, "--launcher", "ray", "--strategy", "horovod", "--", "python", "train.py"
    )
    assert result.exit_code == 2 and "horovodrun, not Ray actors" in result.stderr


def test_workers_placed_by_ray_get_their_nodes_addresses(tmp_path):
    config = Config("multiworker", 2)
    specs = local_processes(
        config,
        ["python", "t.py"],
        "s",
        tmp_path,
        hosts=["10.0.0.1", "10.0.0.2"],
        ports=[4001, 4002],
    )
    assert [json.loads(s.env["TF_CONFIG"]) for s in specs] == [
        {
            "cluster": {"worker": ["10.0.0.1:4001", "10.0.0.2:4002"]},
            "task": {"type": "worker", "index": r},
        }
        for r in (0, 1)
    ]
    assert [(s.env["ADVISOR_RANK"], s.env["ADVISOR_WORLD_SIZE"]) for s in specs] == [
        ("0", "2"),
        ("1", "2"),
    ]
    jax = local_processes(
        Config("jax", 2),
        ["python", "t.py"],
        "s",
        tmp_path,
        hosts=["10.0.0.2", "10.0.0.1"],
        ports=[5001, 5002],
    )
    assert {s.env["ADVISOR_COORDINATOR"] for s in jax} == {"10.0.0.2:5001"}  # rank 0's node


def test_one_bundle_per_process():
    assert [processes_of(Config(s, 4)) for s in ("multiworker", "jax", "mirrored", "single")] == [
        4,
        4,
        1,
        1,
    ]


def test_the_role_tags_the_ray_job_nodes_and_actors():
    from advisor.launch.role import role

    tags = role(
        {
            "ADVISOR_SCALE_STRATEGY": "multiworker",
            "ADVISOR_RANK": "1",
            "ADVISOR_WORLD_SIZE": "2",
            "ADVISOR_RAY_JOB_ID": "02000000",
            "ADVISOR_RAY_NODES": "10.0.0.5 (ab12cd34),10.0.0.6 (ef56ab78)",
            "ADVISOR_RAY_ACTORS": "a1,b2",
        }
    ).tags()
    assert tags == {
        "scale.strategy": "multiworker",
        "scale.workers": "2",
        "ray.job_id": "02000000",
        "ray.nodes": "10.0.0.5 (ab12cd34),10.0.0.6 (ef56ab78)",
        "ray.actors": "a1,b2",
    }


def test_own_processes_are_the_children_started_after_it_and_their_descendants():
    """What the Ray launcher kills when Ray does not shut down: a child that was there before
    (another cluster's, say) survives; a new child and its own child are killed."""
    import subprocess

    import psutil

    from advisor.launch.ray_stop import OwnProcesses

    sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
    before = subprocess.Popen(sleep)
    try:
        own = OwnProcesses()
        parent = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import subprocess, sys, time; subprocess.Popen({sleep!r}); time.sleep(120)",
            ]
        )
        deadline = time.monotonic() + 30
        while not psutil.Process(parent.pid).children():
            assert time.monotonic() < deadline, "the grandchild did not start"
            time.sleep(0.05)
        (grandchild,) = psutil.Process(parent.pid).children()
        own.note()
        assert sorted(p.pid for p in own.alive()) == sorted([parent.pid, grandchild.pid])
        assert own.kill() == []
        parent.wait(10)
        assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
        assert before.poll() is None  # not ours: left running
    finally:
        before.kill()
        before.wait()
