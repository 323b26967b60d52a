"""`advisor demo --backend jax|torch|tf_keras` trains the input-bound example and diagnoses it.

torch and tf_keras start in a fresh process (the backend is set before Keras is imported). The
JAX case runs the command inside this process, where Keras is already loaded on another backend:
the demo must notice and run itself again in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from advisor.store.reader import RunReader, list_run_dirs

pytestmark = pytest.mark.slow  # starts the demo in a fresh process


def _check_demo_output(text: str, runs_dir, backend: str) -> None:
    assert f"on {backend}" in text
    assert "M108 input-bound" in text  # the baseline finds the slow pipeline on every backend
    (run_dir,) = list_run_dirs(runs_dir)
    run = RunReader(run_dir).read()
    assert run.status == "finished"
    assert run.manifest.framework.legacy_keras is (backend == "tf_keras")
    assert run.manifest.framework.backend == ("tensorflow" if backend == "tf_keras" else backend)


@pytest.mark.parametrize("backend", ["torch", "tf_keras"])
def test_demo_in_a_fresh_process(backend, tmp_path):
    pytest.importorskip(backend)
    runs = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS")}
    out = subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", "--runs-dir", str(runs), "demo", "--backend", backend,
         "--epochs", "1"],
        capture_output=True, text=True, timeout=300, env={**env, "COLUMNS": "120"}, check=False,
    )
    assert out.returncode in (0, 1), out.stderr[-3000:]  # 1: findings at the fail level
    _check_demo_output(out.stdout, runs, backend)


def test_demo_reruns_itself_when_keras_is_already_loaded(tmp_path, capfd):
    pytest.importorskip("jax")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() == "jax":
        pytest.skip("this process already trains on JAX")
    runs = tmp_path / "runs"
    from advisor.cli.main import cli

    result = CliRunner().invoke(cli, ["--runs-dir", str(runs), "demo", "--backend", "jax", "--epochs", "1"])
    assert result.exit_code in (0, 1), result.output
    assert keras.backend.backend() != "jax"  # this process was left alone
    _check_demo_output(capfd.readouterr().out, runs, "jax")
