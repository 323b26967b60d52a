"""The backend what-if's parent: exports the model and a sample of batches once, then runs each
backend × compile mode in a fresh process (``child.py``), one at a time — two at once would
share the cores and distort each other — the run's own first, measured the same way.

Every child runs in its own process group with a timeout (whatever it started, e.g. torch.compile's
workers, is killed with it) and within the budget: a candidate whose process cannot start in
the time left is reported as skipped. Nothing a child does touches the user's model.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.experiments.backends.export import Exported, child_path, export
from advisor.experiments.backends.result import (
    FAILED,
    MEASURED,
    NOT_INSTALLED,
    SKIPPED,
    BackendCandidate,
    BackendsResult,
    Config,
    all_configs,
)

log = logging.getLogger("advisor")

MEASURE_SECONDS = 3.0  # measured time per candidate, its rounds together
ROUNDS = 6
WARMUP_SECONDS = 0.5
MAX_SECONDS = 300.0  # the whole backend what-if
CHILD_TIMEOUT = 120.0  # one process, import to exit (torch.compile on a CPU can take a minute)
MIN_CHILD_SECONDS = 10.0  # a candidate is not started with less than this left of the budget


def installed(backend: str) -> bool:
    return importlib.util.find_spec(backend) is not None


def own_config(model: Any) -> Config:
    """The model's own backend and compile mode (``jit_compile`` as Keras resolved it)."""
    from advisor.probes.framework import detect_framework

    _, backend, _ = detect_framework(model)
    jit = getattr(model, "jit_compile", None)
    return Config(backend if backend in ("tensorflow", "jax", "torch") else "tensorflow", bool(jit))


def choose(candidates: str | Sequence[str] | None, own: Config) -> list[Config]:
    """The configs to run, the run's own first; ``None`` or ``"all"``: every backend × mode."""
    if candidates is None or candidates == "all":
        chosen = all_configs()
    else:
        names = [candidates] if isinstance(candidates, str) else list(candidates)
        if not names:
            raise UsageError("backends: an empty list names no candidate")
        chosen = [Config.parse(n) for n in names]
    return [own] + [c for c in dict.fromkeys(chosen) if c != own]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def run_child(exported: Exported, config: Config, workdir: Path, *, seconds: float, rounds: int,
              warmup: float, timeout: float, torch_threads: int | None = None) -> BackendCandidate:
    """One candidate in a fresh process (its group killed on timeout); never raises for the child."""
    candidate = BackendCandidate(config)
    if not installed(config.backend):
        candidate.status, candidate.reason = NOT_INSTALLED, "not installed"
        return candidate
    out = workdir / f"{config.name}.json"
    stderr = workdir / f"{config.name}.stderr"
    command = [sys.executable, "-m", "advisor.experiments.backends.child", "--model", str(exported.model_path),
               "--batches", str(exported.batches_path), "--jit", str(config.jit), "--seconds", str(seconds),
               "--rounds", str(rounds), "--warmup", str(warmup), "--out", str(out)]
    for module in exported.modules:
        command += ["--import", module]
    if torch_threads:
        command += ["--torch-threads", str(torch_threads)]
    env = dict(os.environ, KERAS_BACKEND=config.backend, PYTHONPATH=child_path(), TF_CPP_MIN_LOG_LEVEL="2")
    started = time.perf_counter()
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                start_new_session=True, cwd=workdir)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(proc)  # on timeout, and whatever it left behind after a normal exit
            proc.wait()
    candidate.seconds = time.perf_counter() - started
    if code is None:
        candidate.status, candidate.reason = FAILED, f"timed out after {timeout:.0f} s (process killed)"
        return candidate
    try:
        found = json.loads(out.read_text())
    except (OSError, ValueError):
        tail = _last_line(stderr)
        candidate.status = FAILED
        candidate.reason = f"the process ended with exit code {code} and no result" + (f": {tail}" if tail else "")
        return candidate
    _fill(candidate, found)
    return candidate


def _fill(candidate: BackendCandidate, found: dict[str, Any]) -> None:
    candidate.status = found.get("status", FAILED)
    candidate.reason = found.get("reason")
    candidate.rounds = [float(r) for r in found.get("rounds", []) if r]
    for attr in ("compile_seconds", "load_seconds", "import_seconds"):
        setattr(candidate, attr, found.get(attr))
    candidate.steps = int(found.get("steps") or 0)
    candidate.versions = {"backend": found.get("backend_version"), "keras": found.get("keras_version")}
    if candidate.status == MEASURED and not candidate.rounds:
        candidate.status, candidate.reason = FAILED, "no round was measured"


def measure_exported(exported: Exported, own: Config, candidates: str | Sequence[str] | None = None, *,
                     workdir: Path, seconds: float = MEASURE_SECONDS, rounds: int = ROUNDS,
                     warmup: float = WARMUP_SECONDS, max_seconds: float = MAX_SECONDS,
                     timeout: float = CHILD_TIMEOUT, torch_threads: int | None = None,
                     started: float | None = None) -> BackendsResult:
    """Run the chosen candidates on an exported model, one process after another."""
    t0 = started if started is not None else time.perf_counter()
    configs = choose(candidates, own)
    result = BackendsResult(own.name, exported.batch_size, exported.batches, budget_seconds=max_seconds,
                            note=exported.note)
    for config in configs:
        result.candidates[config.name] = BackendCandidate(config, SKIPPED, "not reached")
    for config in configs:
        left = t0 + max_seconds - time.perf_counter()
        if installed(config.backend) and left < MIN_CHILD_SECONDS:
            result.candidates[config.name].reason = f"the budget ({max_seconds:.0f} s) ran out before it"
            result.stopped = result.stopped or "the budget ran out"
            continue
        log.debug("advisor: backends: measuring %s", config.label)
        result.candidates[config.name] = run_child(exported, config, workdir, seconds=seconds, rounds=rounds,
                                                   warmup=warmup, timeout=min(timeout, max(1.0, left)),
                                                   torch_threads=torch_threads)
    if exported.script_classes:
        classes = ", ".join(exported.script_classes)
        extra = f"custom classes defined in the script (__main__: {classes}) cannot be imported by a fresh process; " \
                "move them to a module"
        result.note = f"{result.note}; {extra}" if result.note else extra
    result.seconds = time.perf_counter() - t0
    return result


def measure_backends(model: Any, data: Any, candidates: str | Sequence[str] | None = None, *,
                     batch_size: int | None = None, seconds: float = MEASURE_SECONDS, rounds: int = ROUNDS,
                     warmup: float = WARMUP_SECONDS, max_seconds: float = MAX_SECONDS,
                     timeout: float = CHILD_TIMEOUT, torch_threads: int | None = None,
                     sample: int | None = None) -> BackendsResult:
    """Measure ``model``'s training speed on every installed backend × compile mode (or the
    ``candidates`` named, e.g. ``["jax+jit", "torch"]``), each in a fresh process, beside its own
    measured the same way. Compute only: the batches are a cached sample of ``data``."""
    from advisor.experiments.backends.export import SAMPLE_BATCHES

    started = time.perf_counter()
    if not isinstance(seconds, (int, float)) or seconds <= 0 or rounds < 1:
        raise UsageError("backends: seconds must be positive and rounds at least 1")
    own = own_config(model)
    with tempfile.TemporaryDirectory(prefix="advisor-backends-") as tmp:
        exported = export(model, data, Path(tmp), batch_size, sample or SAMPLE_BATCHES)
        return measure_exported(exported, own, candidates, workdir=Path(tmp), seconds=seconds, rounds=rounds,
                                warmup=warmup, max_seconds=max_seconds, timeout=timeout, torch_threads=torch_threads,
                                started=started)
