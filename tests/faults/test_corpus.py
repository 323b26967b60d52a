"""Every input of tests/faults/corpus/ — each once crashed, hung or was misread — now gives a
result or a one-line error with a documented exit code, in a fresh process with a hard timeout;
plus the special files git cannot hold: a FIFO, /dev/zero, a 5 GiB sparse file, a 10 MB line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import (
    advisor_subprocess,
    assert_clean,
    cli,
    lines,
    time_limit,
    valid_manifest,
    valid_records,
    write_run_dir,
)

from advisor.store.reader import RunReader

CORPUS = Path(__file__).parent / "corpus"
REPLAY = Path(__file__).parent / "replay.py"
RUN_CASES = sorted(p.name for p in (CORPUS / "runs").iterdir())


def _copy_case(name: str, tmp_path: Path) -> Path:
    target = tmp_path / "store" / name
    shutil.copytree(CORPUS / "runs" / name, target)
    manifest = target / "run.json"
    manifest.write_bytes(
        manifest.read_bytes().replace(b"@LOCALHOST@", socket.gethostname().encode())
    )
    return target


def _replay(*args: str, timeout: float = 120) -> list[dict]:
    done = subprocess.run(
        [sys.executable, str(REPLAY), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def good_run(tmp_path):
    return write_run_dir(
        tmp_path / "runs" / "good", json.dumps(valid_manifest()), lines(valid_records())
    )


@pytest.mark.parametrize("name", RUN_CASES)
def test_corpus_run(name, tmp_path):
    run = _copy_case(name, tmp_path)
    with time_limit(30):
        for args in (
            ["check", str(run)],
            ["show", str(run)],
            ["check", str(run.parent)],
            ["--runs-dir", str(run.parent), "runs", "--format", "json"],
        ):
            result = cli(*args)
            assert_clean(result)
            if args[0] == "check" and result.exit_code == 2:
                assert (
                    str(run / "run.json") in result.output
                    or f"run {name} unreadable" in result.output
                )
    listed = json.loads(cli("--runs-dir", str(run.parent), "runs", "--format", "json").stdout)
    assert [r["run_id"] for r in listed] == [name] or listed[0]["status"] != "unreadable"


@pytest.mark.slow
def test_corpus_run_in_a_real_process(tmp_path):
    """The same, as people run it: a real `advisor` process, its stderr and exit code."""
    run = _copy_case("run-id-lone-surrogate", tmp_path)
    done = advisor_subprocess("check", str(run), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "run.json: invalid manifest (run_id" in done.stderr


@pytest.mark.slow  # a fresh process: a hang inside C code is caught by its timeout
def test_corpus_expressions():
    results = _replay("expressions", str(CORPUS / "expressions.txt"), timeout=60)
    assert len(results) == 4
    for r in results:
        assert r.get("crash") is None, r
    # each line's outcome: refused with its reason, or a value (None: unknown, like x / 0)
    outcomes = [r.get("error", r.get("value")) for r in results]
    assert outcomes == [
        "round() digits -100000000 out of range (at most 15)",
        "None",
        "None",
        "arithmetic on a str value ('s')",
    ], outcomes


@pytest.mark.slow  # a fresh process: a hang inside C code is caught by its timeout
def test_corpus_rule_files(good_run):
    files = sorted(str(p) for p in (CORPUS / "rules").iterdir())
    results = _replay("rules", str(good_run), *files, timeout=180)
    assert len(results) == len(files)
    for r in results:
        assert r["crash"] is None and r["code"] in (0, 2), r
        assert "internal error" not in r["output"]
    by_name = {Path(r["file"]).name: r for r in results}
    # Loads (the digits are not constant), then the rule errors at once when evaluated: exit 2.
    evaluated = by_name.pop("condition-round-to-minus-100000000-digits.yaml")
    assert evaluated["code"] == 2
    assert "round() digits -100000000 out of range" in " ".join(evaluated["output"].split())
    # 0 ** -1 is undefined, like x / 0: the rule cannot decide (unknown), nothing crashes.
    undefined = by_name.pop("condition-zero-to-a-negative-power.yaml")
    assert undefined["code"] == 0 and "M199" in undefined["output"]
    by_name = {name: r["output"] for name, r in by_name.items()}
    assert len(by_name) == len(files) - 2
    for name, output in by_name.items():  # refused at load time: one line naming the file
        assert output.startswith("advisor: error: ") and output.count("\n") == 1, output
        assert name in output, (name, output)
    assert "aliases are not allowed" in by_name["alias-bomb.yaml"]
    assert "parameter 'limit' must be a finite number" in by_name["params-nan.yaml"]


@pytest.mark.slow  # a fresh process: a hang inside C code is caught by its timeout
def test_corpus_configurations(good_run):
    files = sorted(str(p) for p in (CORPUS / "config").iterdir())
    results = _replay("config", str(good_run), *files, timeout=120)
    assert len(results) == len(files)
    for r in results:
        assert r["crash"] is None and r["code"] == 2, r
        assert r["output"].startswith("advisor: error: ") and r["file"] in r["output"], r
    by_name = {Path(r["file"]).name: r["output"] for r in results}
    assert "M108.warn_fraction must be a finite number, not nan" in by_name["threshold-nan.toml"]
    assert "M108.warn_fraction must be a finite number, not inf" in by_name["threshold-inf.toml"]


# -- files git cannot hold ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse-5gib", "line-10mb", "directory"])
def test_special_worker_files_are_refused_and_the_rest_is_read(kind, tmp_path):
    run = write_run_dir(
        tmp_path / "store" / "special",
        json.dumps(valid_manifest(num_workers=2)),
        lines(valid_records()),
    )
    odd = run / "worker-1.jsonl"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")
    elif kind == "sparse-5gib":
        with open(odd, "wb") as fh:
            fh.truncate(5 << 30)
    elif kind == "line-10mb":
        odd.write_bytes(b'{"type": "event", "t": 1, "message": "' + b"x" * (10 << 20) + b'"}\n')
    else:
        odd.mkdir()
    with time_limit(20):
        read = RunReader(run).read()
        result = cli("check", str(run))
    assert len(read.records[0]) == len(valid_records())  # the readable worker is all there
    assert read.problems and read.problems[0].startswith("worker-1.jsonl")
    assert result.exit_code == 3 and "worker-1.jsonl" in result.output  # incomplete, says why


def test_a_fifo_manifest_is_refused_without_hanging(tmp_path):
    run = tmp_path / "store" / "fifo"
    run.mkdir(parents=True)
    os.mkfifo(run / "run.json")
    with time_limit(10):
        result = cli("check", str(run))
        listing = cli("--runs-dir", str(run.parent), "runs", "--format", "json")
    assert result.exit_code == 2 and "not a regular file" in result.output
    assert listing.exit_code == 0  # named as what it is, never left invisible
    assert [(r["run_id"], r["status"], r["error"]) for r in json.loads(listing.stdout)] == [
        ("fifo", "unreadable", "run.json: not a regular file (a FIFO); refused")
    ]
