"""`advisor --version`, `runs`, `show`: real runs written by the writer, read through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from advisor import __version__
from advisor.store.schema import EpochRecord, WindowRecord
from advisor.store.writer import RunWriter

pytestmark = pytest.mark.slow  # trains a model or starts a process


def advisor(*args: str, env_runs: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "advisor.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def write_run(runs_dir, samples_per_window: int = 6400, price: float | None = 2.0) -> RunWriter:
    w = RunWriter(
        runs_dir,
        manifest={
            "global_batch_size": 64,
            "price_per_hour": price,
            "price_source": "argument" if price else None,
        },
        name="cli",
    )
    t = time.time()
    for i in range(4):
        w.write(
            WindowRecord(
                t=t + i,
                epoch=0,
                seconds=2.0,
                steps=100,
                samples=samples_per_window,
                step_begin=i * 100,
                step_end=(i + 1) * 100,
                warmup=i == 0,
            )
        )
    w.write(EpochRecord(t=t + 5, epoch=0, seconds=8.0, train_seconds=8.0, steps=400, samples=25600))
    w.close()
    return w


def test_version():
    out = advisor("--version")
    assert out.returncode == 0 and __version__ in out.stdout


def test_runs_lists_samples_per_second_and_dollar(runs_dir):
    w = write_run(runs_dir)
    out = advisor("--runs-dir", str(runs_dir), "runs", "--format", "json")
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    assert row["run_id"] == w.run_id and row["status"] == "finished"
    assert row["samples_per_s"] == 3200.0  # 3 measured windows × 6400 samples ÷ 6 s
    assert row["samples_per_dollar"] == 3200.0 * 3600 / 2.0
    text = advisor("--runs-dir", str(runs_dir), "runs")
    assert w.run_id in text.stdout and "3,200.0" in text.stdout


def test_show_summary_text_and_json(runs_dir):
    w = write_run(runs_dir)
    out = advisor("--runs-dir", str(runs_dir), "show", w.run_id, "--no-diagnosis")
    assert out.returncode == 0, out.stderr
    assert (
        "samples/s" in out.stdout and "3,200.0" in out.stdout and "samples per dollar" in out.stdout
    )
    payload = json.loads(advisor("--runs-dir", str(runs_dir), "show", "--format", "json").stdout)
    assert payload["facts"]["throughput.samples_per_s"] == 3200.0
    assert payload["status"] == "finished"


def test_show_prints_install_hints_with_their_extra(runs_dir):
    # The diagnosis is printed as plain text: "[profile]" is an extra's name, not console markup.
    w = write_run(runs_dir)
    out = advisor("--runs-dir", str(runs_dir), "show", w.run_id)
    assert out.returncode == 0, out.stderr
    assert (
        "keras-advisor[profile] installed" in out.stdout
        and "keras-advisor installed" not in out.stdout
    )


def test_unknown_run_is_a_one_line_error_with_exit_2(runs_dir):
    write_run(runs_dir)
    out = advisor("--runs-dir", str(runs_dir), "show", "does-not-exist")
    assert out.returncode == 2
    assert out.stderr.strip().startswith("advisor: error: no run 'does-not-exist'")
    assert "Traceback" not in out.stderr


def test_corrupt_run_is_a_one_line_error(runs_dir):
    w = write_run(runs_dir)
    (w.path / "run.json").write_text("{")
    out = advisor("--runs-dir", str(runs_dir), "show", str(w.path))
    assert out.returncode == 2 and "run.json: unreadable manifest" in out.stderr
    assert "Traceback" not in out.stderr
    listing = advisor("--runs-dir", str(runs_dir), "runs", "--format", "json")
    assert listing.returncode == 0 and json.loads(listing.stdout)[0]["status"] == "unreadable"


def test_empty_store(tmp_path):
    out = advisor("--runs-dir", str(tmp_path / "empty"), "runs")
    assert out.returncode == 0 and "no runs" in out.stdout
    out = advisor("--runs-dir", str(tmp_path / "empty"), "show")
    assert out.returncode == 2 and "no runs in this store" in out.stderr
