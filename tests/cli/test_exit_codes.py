"""Exit codes mean one thing: 0 clean, 1 findings at --fail-on, 2 usage or unreadable input or
any unexpected error (one line on stderr, the traceback with --debug), 3 a run that cannot be
judged unless --allow-incomplete — in-process and in a real `advisor` process."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.store.schema import ContextRecord, EventRecord, WindowRecord
from advisor.store.writer import RunWriter


def run_advisor(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def write(store, name, *, windows=4, close=True, event=None):
    w = RunWriter(store, run_id=name, manifest={"global_batch_size": 32})
    t = time.time()
    w.write(ContextRecord(t=t, values={"context.run_eagerly": True}))
    for i in range(windows):
        w.write(
            WindowRecord(
                t=t + i,
                epoch=0,
                seconds=1.0,
                steps=10,
                samples=320,
                step_begin=10 * i,
                step_end=10 * (i + 1),
                warmup=i == 0,
            )
        )
    if event:
        w.write(
            EventRecord(
                t=t,
                level="error",
                source=event,
                message=f"{event} collector failed in on_train_begin: boom",
            )
        )
    if close:
        w.close()
    return w.path


@pytest.fixture
def cfg(tmp_path):
    (tmp_path / "empty.toml").write_text("")
    return ["--config", str(tmp_path / "empty.toml"), "--select", "C450"]


def test_complete_runs_give_0_or_1(runs_dir, cfg):
    run = write(runs_dir, "eager")
    assert run_advisor("check", str(run), *cfg).exit_code == 1  # run_eagerly fails C450
    assert run_advisor("check", str(run), *cfg, "--fail-on", "error").exit_code == 1
    assert run_advisor("check", str(run), *cfg, "--exit-zero").exit_code == 0


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("empty", "no throughput measured"),
        ("collector", "collector 'throughput' failed"),
        ("running", "the run is still running"),
    ],
)
def test_runs_that_cannot_be_judged_give_3(runs_dir, cfg, kind, reason):
    run = {
        "empty": lambda: write(runs_dir, "empty", windows=1),
        "collector": lambda: write(runs_dir, "broken", event="throughput"),
        "running": lambda: write(runs_dir, "live", close=False),
    }[kind]()
    result = run_advisor("check", str(run), *cfg)
    assert result.exit_code == 3 and reason in result.output
    assert (
        run_advisor("check", str(run), *cfg, "--exit-zero").exit_code == 3
    )  # not a verdict to hide
    assert run_advisor("check", str(run), *cfg, "--allow-incomplete").exit_code in (0, 1)
    report = json.loads(run_advisor("check", str(run), *cfg, "--format", "json").stdout)
    assert any(reason in r for r in report["incomplete"])
    github = run_advisor("check", str(run), *cfg, "--format", "github").stdout
    assert github.startswith("::error title=run not judgeable")


def test_a_store_with_an_unreadable_run_checks_the_others(runs_dir, cfg):
    write(runs_dir, "a-good")
    bad = write(runs_dir, "b-bad")
    (bad / "run.json").write_text('{"schema_version": 1, "run_id": "b-bad", "created": NaN}')
    write(runs_dir, "c-good")
    result = run_advisor("check", str(runs_dir), *cfg, "--format", "json")
    assert result.exit_code == 2
    reports = json.loads(result.stdout)
    assert [r["run"]["run_id"] for r in reports] == ["a-good", "c-good"]
    errors = [line for line in result.stderr.splitlines() if line.startswith("advisor: error:")]
    assert errors == [errors[0]] and "run b-bad unreadable" in errors[0] and "run.json" in errors[0]
    listed = json.loads(run_advisor("--runs-dir", str(runs_dir), "runs", "--format", "json").stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [
        ("a-good", "finished"),
        ("b-bad", "unreadable"),
        ("c-good", "finished"),
    ]
    assert "created" in listed[1]["error"]


def test_an_unexpected_error_is_one_line_and_exit_2(runs_dir, monkeypatch):
    run = write(runs_dir, "boom")

    def explode(*args, **kwargs):
        raise ZeroDivisionError("division by zero somewhere deep")

    monkeypatch.setattr("advisor.service.run_service.RunService.diagnose", explode)
    result = run_advisor("check", str(run))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "advisor: error: internal error (ZeroDivisionError: division by zero "
        "somewhere deep); run with --debug for the traceback\n"
    )
    debug = run_advisor("--debug", "check", str(run))
    assert debug.exit_code == 2 and "Traceback (most recent call last)" in debug.stderr
    assert "in explode" in debug.stderr


@pytest.mark.slow
def test_real_process_exit_codes(runs_dir, cfg):
    """What CI sees: a real process, its exit code, and one line on stderr."""
    good = write(runs_dir, "eager")
    empty = write(runs_dir, "empty", windows=1)

    def advisor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "advisor.cli.main", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert advisor("check", str(good), *cfg).returncode == 1
    assert advisor("check", str(empty), *cfg).returncode == 3
    missing = advisor("check", "no-such-run", "--runs-dir-typo")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    absent = advisor("--runs-dir", str(runs_dir), "check", "zzz")
    assert (
        absent.returncode == 2
        and absent.stderr.count("\n") == 1
        and "no run 'zzz'" in absent.stderr
    )


@pytest.mark.slow
def test_a_closed_output_pipe_exits_141(runs_dir):
    """`advisor show RUN | head -1`: the reader goes away; the exit code says so (128 + SIGPIPE),
    not a verdict (1) and not a traceback."""
    run = write(runs_dir, "piped")
    for args in (["show", str(run)], ["check", str(run)]):
        process = subprocess.Popen(
            [sys.executable, "-m", "advisor.cli.main", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # closed before the first line is written
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=120) == 141, stderr
        assert stderr == ""
