"""A real one-host Slurm cluster for the launcher's tests (scripts/slurm_cluster.sh): munged,
slurmctld and two node daemons, n1 and n2, on 127.0.0.1, started once per session and stopped
after. Without Slurm's binaries (and where they cannot be installed here) its tests skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm_cluster.sh"
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "squeue")
INSTALL = ["apt-get", "install", "-y", "-q", "slurm-wlm", "munge"]


@dataclass(frozen=True)
class SlurmCluster:
    folder: Path
    conf: Path

    def run(self, *argv: str) -> str:
        """A Slurm client command against this cluster; its stdout."""
        env = {**os.environ, "SLURM_CONF": str(self.conf)}
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=30, check=True
        ).stdout


def _missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _install_reason() -> str | None:
    """Why Slurm is not here and cannot be installed now; None once it is installed."""
    if not _missing():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        missing = " ".join(_missing())
        return f"needs Slurm and munge ({missing} missing): apt-get install slurm-wlm munge as root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        done = subprocess.run(
            INSTALL, env=env, capture_output=True, text=True, timeout=600, check=False
        )
    except subprocess.TimeoutExpired:
        return "apt-get install slurm-wlm munge did not finish within 600 s"
    if done.returncode != 0 or _missing():
        return (
            f"apt-get install slurm-wlm munge failed: {(done.stderr or done.stdout).strip()[-200:]}"
        )
    return None


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """The running cluster; ``SLURM_CONF`` points at it for the session (sbatch and launcher)."""
    reason = _install_reason()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("slurm")
    try:
        subprocess.run(
            ["bash", str(SCRIPT), "start", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    except subprocess.CalledProcessError as exc:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=60)
        pytest.fail(f"the Slurm cluster did not start: {exc.stderr.strip()[-500:]}")
    cluster = SlurmCluster(folder, folder / "slurm.conf")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", str(cluster.conf))
        try:
            yield cluster
        finally:
            subprocess.run(
                ["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=60
            )
