"""`advisor demo --backend jax|torch|tf_keras` trains the input-bound example and diagnoses it.

torch and tf_keras start in a fresh process (the backend is set before Keras is imported). The
JAX case runs the command inside this process, where Keras is already loaded on another backend:
the demo must notice and run itself again in a child process.

The three demos are independent, so the fresh processes start together, before the JAX case
(``fresh_demos``), and run while it does: much of a demo's time is importing frameworks and
waiting on the example's deliberately slow input (a sleep per element), and on two cores three
side by side take about half the time of three in a row. The verdict they assert stays decisive
under that load: the example's input is ten times its step or more (examples/input_bound/naive.py),
and sharing the CPU slows the step, not the sleeps, by a few times at most.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from processes import kill_leftovers

from advisor.store.reader import RunReader, list_run_dirs

pytestmark = pytest.mark.slow  # starts the demo in a fresh process

FRESH = ["torch", "tf_keras"]
DEMO_TIMEOUT_S = 600  # from the start of all demos together; one alone takes ~20 s on 2 idle cores


def _check_demo_output(text: str, runs_dir, backend: str) -> None:
    assert f"on {backend}" in text
    assert "M108 input-bound" in text  # the baseline finds the slow pipeline on every backend
    # the what-if tried the fixes on the example: a cache or a parallel map gains 2-50x here
    assert "Measured what-if:" in text and "measured: " in text
    (run_dir,) = list_run_dirs(runs_dir)
    run = RunReader(run_dir).read()
    assert run.status == "finished"
    assert run.manifest.framework.legacy_keras is (backend == "tf_keras")
    assert run.manifest.framework.backend == ("tensorflow" if backend == "tf_keras" else backend)


@dataclass
class Demo:
    """One ``advisor demo`` in a fresh process, started by ``fresh_demos``."""

    runs: Path
    stdout: Path
    stderr: Path
    proc: subprocess.Popen[bytes]
    deadline: float


@pytest.fixture(scope="module", autouse=True)
def fresh_demos(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The selected fresh-process demos of installed backends, started at once when this module
    begins (autouse: before the JAX case, which runs while they do). Their output goes to files,
    not pipes, which nobody reads until they end."""
    import importlib.util

    selected = {
        item.callspec.params["backend"]
        for item in request.session.items
        if item.path == request.path
        and "backend" in getattr(getattr(item, "callspec", None), "params", {})
    }
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS")}
    deadline = time.monotonic() + DEMO_TIMEOUT_S
    demos: dict[str, Demo] = {}
    try:
        for backend in FRESH:
            if backend not in selected or importlib.util.find_spec(backend) is None:
                continue
            folder = tmp_path_factory.mktemp(f"demo-{backend}")
            runs, stdout, stderr = folder / "runs", folder / "stdout.txt", folder / "stderr.txt"
            with stdout.open("wb") as out, stderr.open("wb") as err:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "advisor.cli.main",
                        "--runs-dir",
                        str(runs),
                        "demo",
                        "--backend",
                        backend,
                        "--epochs",
                        "1",
                    ],
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    env={**env, "COLUMNS": "120"},
                )
            demos[backend] = Demo(runs, stdout, stderr, proc, deadline)
        yield demos
    finally:
        kill_leftovers(demo.proc for demo in demos.values())


@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_demo_reruns_itself_when_keras_is_already_loaded(tmp_path, capfd):
    pytest.importorskip("jax")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() == "jax":
        pytest.skip("this process already trains on JAX")
    runs = tmp_path / "runs"
    from advisor.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs), "demo", "--backend", "jax", "--epochs", "1"]
    )
    assert result.exit_code in (0, 1), result.output
    assert keras.backend.backend() != "jax"  # this process was left alone
    _check_demo_output(capfd.readouterr().out, runs, "jax")


@pytest.mark.parametrize("backend", FRESH)
def test_demo_in_a_fresh_process(backend, fresh_demos):
    pytest.importorskip(backend)
    demo = fresh_demos[backend]
    try:
        returncode = demo.proc.wait(timeout=max(1.0, demo.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"the {backend} demo did not end within {DEMO_TIMEOUT_S} s:\n"
            + demo.stderr.read_text(errors="replace")[-3000:]
        )
    stderr = demo.stderr.read_text(errors="replace")
    assert returncode in (0, 1), stderr[-3000:]  # 1: findings at the fail level
    _check_demo_output(demo.stdout.read_text(errors="replace"), demo.runs, backend)
