"""The runs directory of a cluster sweep, judged before anything is submitted (launch/shared.py):
refused where it evidently lives on this host only and workers run on other hosts, a warning on a
local disk, silence on a network file system or when every node is this host."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import UsageError
from advisor.launch.shared import (
    check_runs_dir,
    local_addresses,
    mount_of,
    remote_nodes,
    runs_dir_verdict,
)

REMOTE = ["192.0.2.10"]  # TEST-NET-1: never this host
MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw 0 0
fileserver:/export/home /shared nfs4 rw,vers=4.2 0 0
lustre@o2ib:/scratch /scratch lustre rw 0 0
"""


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/shared/alice/runs", None),  # NFS: fine
        ("/scratch/runs", None),  # Lustre: fine
        ("/home/alice/runs", "warning"),  # a local disk: may be exported, say so
        ("/dev/shm/runs", "error"),  # memory: never shared
        ("/tmp/runs", "error"),  # node-local by convention, whatever its file system
    ],
)
def test_what_each_file_system_gets(path, expected):
    verdict = runs_dir_verdict(Path(path), REMOTE, MOUNTS)
    got = None if verdict is None else ("error" if verdict.error else "warning")
    assert got == expected
    if verdict is not None:
        assert "192.0.2.10" in verdict.message and "\n" not in verdict.message


def test_nodes_on_this_host_share_any_directory(tmp_path):
    # The one-host test clusters (Slurm's n1/n2 on 127.0.0.1, Ray's simulated nodes on this
    # host's address) write into this host's /tmp: nothing to say.
    here = [socket.gethostname(), "127.0.0.1", *sorted(local_addresses())[:2]]
    assert remote_nodes(here) == []
    assert runs_dir_verdict(tmp_path / "runs", remote_nodes(here)) is None


def test_this_machines_tmp_with_a_remote_node_is_refused_in_one_line(tmp_path):
    assert mount_of(tmp_path) is not None  # /proc/self/mounts read for real
    warnings: list[str] = []
    with pytest.raises(UsageError) as caught:
        check_runs_dir(tmp_path / "runs", ["127.0.0.1", *REMOTE], warnings.append)
    assert str(tmp_path) in str(caught.value) and "--runs-dir" in str(caught.value)
    assert caught.value.exit_code == 2 and warnings == []


def test_scale_refuses_before_submitting(tmp_path, monkeypatch):
    """`advisor scale --launcher slurm` with a partition whose node is another host: exit 2, one
    line, no sweep written (sinfo answers through a stand-in on PATH: the real one-host cluster
    has only local nodes)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sinfo = bin_dir / "sinfo"
    sinfo.write_text("#!/bin/sh\necho 192.0.2.10\n")
    sinfo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    from advisor.cli.main import cli

    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(runs),
            "scale",
            "--launcher",
            "slurm",
            "--workers",
            "2",
            "--gpus-per-node",
            "0",
            "--",
            "python",
            "train.py",
        ],
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "on this host only" in line and "192.0.2.10" in line
    assert not (runs / "sweeps").exists()
