"""No secret in any file of the store after a real failing sweep: the training script rejects a
secret argument (argparse quotes it back) and prints a secret environment variable, and every
worker log, the sweep file and everything else kept under the runs directory is searched for
both, byte for byte."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.store.sweep import read_sweep, sweep_dir

pytestmark = pytest.mark.slow  # starts processes

API_KEY = "sk-" + "Zq7" * 10  # an OpenAI-style token shape
ENV_SECRET = "correct-horse-battery-staple"  # no token shape: hidden because of its name
OTHER = "plainvalue4242"  # --db-password's value: hidden because of its flag's name

TRAIN = """
import argparse, os, sys
print("starting; service password is", os.environ["SERVICE_PASSWORD"], flush=True)
print("argv:", " ".join(sys.argv), flush=True)
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int)
parser.parse_args()
"""


def test_a_failing_sweep_leaves_no_secret_in_the_store(tmp_path, monkeypatch):
    from advisor.cli.main import cli

    train = tmp_path / "train.py"
    train.write_text(TRAIN, encoding="utf-8")
    runs = tmp_path / "runs"
    monkeypatch.setenv("SERVICE_PASSWORD", ENV_SECRET)
    strategies = ["--strategy", "single"]
    if importlib.util.find_spec("tf_keras") is not None:
        strategies += ["--strategy", "multiworker"]  # two ranks: worker-1.log too
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir", str(runs), "scale", "--workers", "1,2", *strategies,
            "--sweep-id", f"secret{os.getpid()}", "--timeout", "60", "--no-report", "--",
            sys.executable, str(train), f"--api-key={API_KEY}", "--db-password", OTHER,
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    record = read_sweep(sweep_dir(runs, f"secret{os.getpid()}"))
    assert {c.status for c in record.configs} == {"failed"}
    logs = [Path(p) for c in record.configs for p in c.logs]
    assert len(logs) >= 3
    for log in logs:  # the lines were written, with the secrets hidden
        text = log.read_text(encoding="utf-8")
        assert "unrecognized arguments: --api-key=***" in text, text
        assert "service password is ***" in text and "--db-password ***" in text, text
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert len(files) > len(logs)
    for path in files:
        data = path.read_bytes()
        for secret in (API_KEY, ENV_SECRET, OTHER):
            assert secret.encode() not in data, f"{secret} in {path}"
