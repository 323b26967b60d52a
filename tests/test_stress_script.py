"""scripts/stress_tests.sh: runs pytest with its arguments beside a busy core, then cleans up."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "stress_tests.sh"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _pids(output: str) -> list[int]:
    match = re.search(r"\(pids ([\d ]+)\)", output)
    assert match, output
    return [int(p) for p in match.group(1).split()]


def _gone(pids: list[int], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_runs_pytest_with_the_arguments_and_stops_the_busy_loops():
    env = {**os.environ, "PYTHON": sys.executable, "STRESS_BUSY_CORES": "2"}
    done = subprocess.run(
        ["bash", str(SCRIPT), "tests/test_readme.py", "-p", "no:cacheprovider", "-n", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
    assert re.search(
        r"stress_tests: wall time \d+m\d\ds \(\d+ s\) with 2 busy core\(s\); pytest exit 0",
        done.stdout,
    )
    pids = _pids(done.stdout)
    assert len(pids) == 2 and _gone(pids)


def test_a_failing_run_keeps_its_exit_code():
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(SCRIPT), "tests/no_such_test_file.py", "-n", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 4  # pytest: file not found
    assert "pytest exit 4" in done.stdout and _gone(_pids(done.stdout))


def test_interrupting_the_script_stops_the_busy_loops():
    env = {**os.environ, "PYTHON": sys.executable}
    script = subprocess.Popen(
        [
            "bash",
            str(SCRIPT),
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-k",
            "nothing",
            "tests/test_readme.py",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert script.stdout is not None
    first = script.stdout.readline()  # printed once the busy loop runs
    pids = _pids(first)
    assert pids and all(_alive(p) for p in pids)
    script.send_signal(signal.SIGINT)
    script.wait(timeout=60)
    assert _gone(pids)


def test_a_python_given_as_a_path_is_the_python_on_path(tmp_path):
    """PYTHON=.venv/bin/python of a virtualenv that is not activated: the tests that start
    `python train.py` (the real sweeps) must find that interpreter, not whatever PATH had first."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import os, shutil, sys\n"
        "def test_python_on_path():\n"
        "    found = shutil.which('python')\n"
        "    assert found and os.path.dirname(found) == "
        "os.path.dirname(os.path.abspath(sys.executable)), found\n"
    )
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PATH": "/usr/bin:/bin",
        "STRESS_BUSY_CORES": "1",
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), str(probe), "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout and _gone(_pids(done.stdout))
