"""Shared by the fault and property tests: a time limit, a valid run to mutate, the CLI in
process and in a subprocess, what a clean outcome looks like, and how many examples a deep
fuzzer draws."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from property_examples import examples, profile  # noqa: F401 — examples: for the tests

CLEAN_EXIT_CODES = {0, 1, 2, 3}
FUZZ_SHARE = 5  # the suite's run of a deep fuzzer draws a fifth of its deep count
T0 = 1_764_000_000.0  # a fixed time (2025-11-24): generated runs must not depend on the clock


def fuzz_examples(deep: int) -> int:
    """``max_examples`` of a deep ``test_many_*`` fuzzer.

    Like every property test, it draws the same examples on every run of the suite (the
    ``replay`` profile of ``tests/conftest.py``): a fifth of ``deep`` by default (the suite runs
    on shared 2-core machines), the full ``deep`` count under ``ADVISOR_HYPOTHESIS=explore``
    (with new examples each run). ``ADVISOR_FUZZ_EXAMPLES=deep`` draws the full count in either
    profile, ``ADVISOR_FUZZ_EXAMPLES=N`` draws N (a soak run)."""
    wanted = os.environ.get("ADVISOR_FUZZ_EXAMPLES", "").strip().lower()
    if wanted == "deep" or (not wanted and profile() == "explore"):
        return deep
    if wanted:
        return max(1, int(wanted))
    return max(1, deep // FUZZ_SHARE)


class Hang(Exception):
    """The code under test ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` if the block runs longer than ``seconds`` (Python-level code only: a
    loop inside one C call is caught by the subprocess replays, not here)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)  # e.g. pytest-timeout's own alarm
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # give the outer alarm back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - started)))


def valid_manifest(run_id: str = "fuzz", now: float = T0, **fields: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "run_id": run_id,
        "created": now - 100,
        "updated": now - 1,
        "ended": now - 1,
        "status": "finished",
        "pid": 1,
        "global_batch_size": 32,
        "price_per_hour": 1.0,
        "price_source": "argument",
        **fields,
    }


def valid_records(now: float = T0) -> list[dict[str, Any]]:
    """A small finished run: a start, a context, four windows (one warm-up), an epoch, an end."""
    t = now - 90
    out: list[dict[str, Any]] = [
        {"type": "start", "t": t, "rank": 0, "pid": 1, "hostname": "elsewhere"},
        {
            "type": "context",
            "t": t,
            "values": {"context.run_eagerly": False, "throughput.logging": True},
        },
    ]
    for i in range(4):
        out.append(
            {
                "type": "window",
                "t": t + i + 1,
                "epoch": 0,
                "seconds": 1.0,
                "steps": 25,
                "samples": 800,
                "step_begin": 25 * i,
                "step_end": 25 * (i + 1),
                "warmup": i == 0,
                "step_count": 25,
                "step_time_mean": 0.04,
                "step_time_std": 0.004,
                "step_time_max": 0.05,
                "step_outliers": 0,
            }
        )
    out.append(
        {
            "type": "epoch",
            "t": t + 5,
            "epoch": 0,
            "seconds": 4.0,
            "train_seconds": 4.0,
            "steps": 100,
            "samples": 3200,
        }
    )
    out.append({"type": "end", "t": t + 6, "status": "finished"})
    return out


def write_run_dir(path: Path, manifest: bytes | str, worker: bytes | str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_bytes(
        manifest.encode("utf-8", "surrogatepass") if isinstance(manifest, str) else manifest
    )
    (path / "worker-0.jsonl").write_bytes(
        worker.encode("utf-8", "surrogatepass") if isinstance(worker, str) else worker
    )
    return path


def lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def cli(*args: str) -> Result:
    """``advisor ARGS`` in this process (the CLI's own error handling included)."""
    from advisor.cli.main import cli as advisor_cli

    return CliRunner().invoke(advisor_cli, list(args))


def assert_clean(result: Result) -> None:
    """An outcome a user can act on: a documented exit code and never an internal error."""
    output = result.output
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), f"{type(exc).__name__}: {exc}"
    assert result.exit_code in CLEAN_EXIT_CODES, (result.exit_code, output[-2000:])
    assert "internal error" not in output, output[-2000:]
    assert "Traceback" not in output, output[-2000:]
    if result.exit_code == 2:
        errors = [line for line in output.splitlines() if line.startswith("advisor: error:")]
        assert errors, output[-2000:]


def assert_one_clear_line(exc: BaseException, names: object = None) -> None:
    """A refusal a person can act on: one non-empty line, no traceback, naming ``names`` (a file)
    when given. Property tests that catch an error check it with this, so that a refusal for the
    wrong reason (or a blank one) fails them."""
    text = str(exc)
    assert text.strip(), f"{type(exc).__name__} with no message"
    assert "\n" not in text.strip(), text
    assert "Traceback" not in text, text
    if names is not None:
        assert str(names) in text, (str(names), text)


def advisor_subprocess(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``advisor ARGS`` as a real process with a hard timeout (a hang in C code is caught too)."""
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )
