"""The scenario suite: find the scenarios, run one, and score its diagnosis against expected.toml.

Each scenario is a folder with ``train.py`` (a small training with a known cause, advised with
default options) and ``expected.toml``:

    cause = "..."               # what is wrong, in words
    backend = "jax"             # optional: the Keras backend the script sets for itself
    must_fail = ["C401", ...]   # rules that must fail (recall)
    may_fail = ["S303", ...]    # also true of this run: correct, not required (precision)
    top = "C401"                # the rule that must rank first
    ranked = ["C401", "D607"]   # optional: these rules, in this order, among the failures
    must_not_fire = [...]       # rules that must not fail at all

Precision counts the findings of warning severity and above: each must be in must_fail or
may_fail. Used by ``benchmarks/diagnosis.py`` and the slow scenario tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
SEVERITY = {"info": 0, "warning": 1, "error": 2}


@dataclass
class Expected:
    name: str
    cause: str
    must_fail: list[str]
    may_fail: list[str] = field(default_factory=list)
    top: str | None = None
    ranked: list[str] = field(default_factory=list)
    must_not_fire: list[str] = field(default_factory=list)
    backend: str | None = None

    @property
    def script(self) -> Path:
        return HERE / self.name / "train.py"


@dataclass
class Score:
    name: str
    failed: list[str]  # every failing rule, ranked
    flagged: list[str]  # failures of warning severity and above
    missed: list[str]  # must_fail rules that did not fail
    unexpected: list[str]  # flagged rules outside must_fail and may_fail
    fired_forbidden: list[str]  # must_not_fire rules that failed
    top: str | None
    top_ok: bool | None  # None: the scenario names no top rule
    ranked_ok: bool | None
    recall_hits: int
    recall_total: int
    seconds: float = 0.0
    error: str | None = None
    top_measured: str | None = None  # the top finding's measured gain (with the what-if on)
    why_missed: dict[str, str] = field(
        default_factory=dict
    )  # missed rule -> its status and message

    @property
    def precision_hits(self) -> int:
        return len(self.flagged) - len(self.unexpected)

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and not self.missed
            and not self.unexpected
            and not self.fired_forbidden
            and self.top_ok is not False
            and self.ranked_ok is not False
        )


def scenarios(only: list[str] | None = None) -> list[Expected]:
    """Every scenario folder with an expected.toml, by name (or those named in ``only``)."""
    found = []
    for path in sorted(HERE.glob("*/expected.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        name = path.parent.name
        if only and name not in only:
            continue
        found.append(
            Expected(
                name=name,
                cause=str(data["cause"]),
                must_fail=list(data.get("must_fail", [])),
                may_fail=list(data.get("may_fail", [])),
                top=data.get("top"),
                ranked=list(data.get("ranked", [])),
                must_not_fire=list(data.get("must_not_fire", [])),
                backend=data.get("backend"),
            )
        )
    return found


def run(
    expected: Expected, runs_dir: Path, timeout_s: float = 180.0, python: str = sys.executable
) -> float:
    """Run the scenario's script into ``runs_dir`` (default advisor options); returns its wall time.
    Raises ``RuntimeError`` with the output's tail when it fails or times out."""
    env = dict(os.environ, ADVISOR_RUNS_DIR=str(runs_dir), TF_CPP_MIN_LOG_LEVEL="3")
    env.setdefault("OMP_NUM_THREADS", "1")
    if expected.backend:
        env["KERAS_BACKEND"] = expected.backend
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [python, str(expected.script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{expected.name}: no result within {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise RuntimeError(f"{expected.name}: exit {done.returncode}\n{tail}")
    return time.perf_counter() - t0


def diagnose(runs_dir: Path) -> Any:
    """The report of the latest run in ``runs_dir``, with the default rules and settings."""
    from advisor.service import RunService

    return RunService(runs_dir).diagnose(None)


def score(expected: Expected, report: Any) -> Score:
    failures = [f for f in report.findings if f.status == "fail"]
    failed = [f.code for f in failures]
    flagged = [f.code for f in failures if SEVERITY[f.severity] >= SEVERITY["warning"]]
    allowed = set(expected.must_fail) | set(expected.may_fail)
    missed = [code for code in expected.must_fail if code not in failed]
    top = failed[0] if failed else None
    top_measured = None
    if failures and getattr(failures[0], "measured", None) is not None:
        top_measured = f"{failures[0].measured.candidate} {failures[0].measured.text}"
    ranked_ok = None
    if expected.ranked:
        positions = [failed.index(code) for code in expected.ranked if code in failed]
        ranked_ok = len(positions) == len(expected.ranked) and positions == sorted(positions)
    return Score(
        name=expected.name,
        failed=failed,
        flagged=flagged,
        missed=missed,
        unexpected=[code for code in flagged if code not in allowed],
        fired_forbidden=[code for code in expected.must_not_fire if code in failed],
        top=top,
        top_ok=None if expected.top is None else top == expected.top,
        ranked_ok=ranked_ok,
        recall_hits=len(expected.must_fail) - len(missed),
        recall_total=len(expected.must_fail),
        top_measured=top_measured,
        why_missed={
            f.code: f"{f.status}: {f.message}" for f in report.findings if f.code in missed
        },
    )
