"""The backend what-if's parent: exports the model and a sample of batches once, then starts each
backend × compile mode in a fresh process (``child.py --serve``), the run's own first, one after
another: each imports its backend, rebuilds the model, compiles and warms up, then waits. Once
all are warm, the parent runs the rounds in turn — a round of the own, then one of each
candidate, and again — never two at once (two would share the cores and distort each other), so
that round *i* of every candidate saw the same minutes of the machine as the own's round *i*
and a speedup is a median of paired ratios, not two medians taken minutes apart.

Every child runs in its own process group with a timeout (whatever it started, e.g. torch.compile's
workers, is killed with it) and within the budget: a candidate whose process cannot start in
the time left (its rounds included) is reported as skipped. Nothing a child does touches the
user's model. Waiting children hold their backend's memory: on a GPU they are started with
growing allocation (``TF_FORCE_GPU_ALLOW_GROWTH``, ``XLA_PYTHON_CLIENT_PREALLOCATE=false``)
unless the environment says otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.experiments.backends.child import PREFIX
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


ROUND_TIMEOUT = 30.0  # at least, for one round's answer (a segment is about seconds / rounds)
STOP_SECONDS = 5.0  # a child told to stop exits within this, or is killed


class _Child:
    """A candidate's process (``child.py --serve``): started, then warm and waiting for rounds."""

    def __init__(
        self, candidate: BackendCandidate, proc: subprocess.Popen[bytes], stderr: Path
    ) -> None:
        self.candidate, self.proc, self.stderr = candidate, proc, stderr
        self.buffer = b""

    def read(self, timeout: float) -> tuple[str, dict[str, Any] | None]:
        """The next protocol line: ("message", it), ("ended", None) or ("timeout", None)."""
        assert self.proc.stdout is not None
        deadline = time.perf_counter() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(PREFIX):
                    try:
                        return "message", json.loads(text[len(PREFIX) :])
                    except ValueError:
                        continue
            left = deadline - time.perf_counter()
            if left <= 0:
                return "timeout", None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return "ended", None
                self.buffer += chunk

    def send(self, line: str) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def fail(self, status: str, reason: str) -> None:
        self.candidate.status, self.candidate.reason = status, reason
        self.kill()

    def ended(self) -> str:
        try:
            code = self.proc.wait(timeout=STOP_SECONDS)  # its stdout closed: it is exiting
        except subprocess.TimeoutExpired:
            code = None
        tail = _last_line(self.stderr)
        return f"the process ended with exit code {code} and no result" + (
            f": {tail}" if tail else ""
        )

    def stop(self, wait: bool = True) -> None:
        """Tell it to stop; with ``wait``, wait for its exit (STOP_SECONDS at most), then kill."""
        if self.proc.poll() is None:
            self.send("stop")
        if not wait:
            return
        try:
            self.proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        _kill_group(self.proc)  # also whatever it left behind after a normal exit
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except (
                    OSError
                ):  # a "stop" still buffered for a child that has gone: nobody reads it
                    pass


def start_child(
    exported: Exported,
    config: Config,
    workdir: Path,
    *,
    seconds: float,
    rounds: int,
    warmup: float,
    timeout: float,
    torch_threads: int | None = None,
) -> tuple[BackendCandidate, _Child | None]:
    """One candidate in a fresh process, waited for until it is warm (its group killed on
    timeout); never raises for the child. The child is returned when it waits for rounds."""
    candidate = BackendCandidate(config)
    if not installed(config.backend):
        candidate.status, candidate.reason = NOT_INSTALLED, "not installed"
        return candidate, None
    stderr = workdir / f"{config.name}.stderr"
    command = [
        sys.executable,
        "-m",
        "advisor.experiments.backends.child",
        "--model",
        str(exported.model_path),
        "--batches",
        str(exported.batches_path),
        "--jit",
        str(config.jit),
        "--seconds",
        str(seconds),
        "--rounds",
        str(rounds),
        "--warmup",
        str(warmup),
        "--serve",
    ]
    for module in exported.modules:
        command += ["--import", module]
    if torch_threads:
        command += ["--torch-threads", str(torch_threads)]
    env = dict(
        os.environ, KERAS_BACKEND=config.backend, PYTHONPATH=child_path(), TF_CPP_MIN_LOG_LEVEL="2"
    )
    for name, value in GPU_SHARING.items():
        env.setdefault(name, value)
    started = time.perf_counter()
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            start_new_session=True,
            cwd=workdir,
        )
    child = _Child(candidate, proc, stderr)
    kind, message = child.read(timeout)
    candidate.seconds = time.perf_counter() - started
    if kind == "timeout":
        child.fail(FAILED, f"timed out after {timeout:.0f} s (process killed)")
        return candidate, None
    if kind == "ended" or message is None:
        child.fail(FAILED, child.ended())
        return candidate, None
    if message.get("status") != "ready":
        child.fail(message.get("status", FAILED), message.get("reason") or "no reason given")
        return candidate, None
    for attr in ("compile_seconds", "load_seconds", "import_seconds"):
        setattr(candidate, attr, message.get(attr))
    candidate.versions = {
        "backend": message.get("backend_version"),
        "keras": message.get("keras_version"),
    }
    return candidate, child


GPU_SHARING = {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def _run_rounds(children: list[_Child], rounds: int, seconds: float, deadline: float) -> str | None:
    """``rounds`` passes, each a round of every live child in turn (the own first); returns why
    it stopped early, if it did. A child whose round fails or does not answer is failed and killed."""
    segment = seconds / max(1, rounds)
    for index in range(rounds):
        live = [c for c in children if c.candidate.status == MEASURING]
        if not live:
            return None
        if index and time.perf_counter() + 1.5 * segment * len(live) > deadline:
            return f"the budget ran out after {index} of {rounds} rounds"
        for child in live:
            began = time.perf_counter()
            wait = max(ROUND_TIMEOUT, 20 * segment)
            if not child.send("round"):
                child.fail(FAILED, f"round {index + 1}: {child.ended()}")
                continue
            kind, message = child.read(wait)
            child.candidate.seconds += time.perf_counter() - began
            if kind == "timeout":
                child.fail(
                    FAILED, f"round {index + 1} timed out after {wait:.0f} s (process killed)"
                )
            elif kind == "ended" or message is None:
                child.fail(FAILED, f"round {index + 1}: {child.ended()}")
            elif "rate" not in message:
                child.fail(
                    message.get("status", FAILED),
                    message.get("reason") or f"round {index + 1} failed",
                )
            else:
                child.candidate.rounds.append(float(message["rate"]))
                child.candidate.round_ends.append(float(message.get("ended") or 0.0))
                child.candidate.steps += int(message.get("steps") or 0)
    return None


MEASURING = "measuring"  # warm, its rounds under way (never left in a result)


def measure_exported(
    exported: Exported,
    own: Config,
    candidates: str | Sequence[str] | None = None,
    *,
    workdir: Path,
    seconds: float = MEASURE_SECONDS,
    rounds: int = ROUNDS,
    warmup: float = WARMUP_SECONDS,
    max_seconds: float = MAX_SECONDS,
    timeout: float = CHILD_TIMEOUT,
    torch_threads: int | None = None,
    started: float | None = None,
) -> BackendsResult:
    """Start the chosen candidates on an exported model one after another, then run their rounds
    interleaved with the own's (see the module's docstring)."""
    t0 = started if started is not None else time.perf_counter()
    deadline = t0 + max_seconds
    configs = choose(candidates, own)
    result = BackendsResult(
        own.name,
        exported.batch_size,
        exported.batches,
        budget_seconds=max_seconds,
        note=exported.note,
    )
    for config in configs:
        result.candidates[config.name] = BackendCandidate(config, SKIPPED, "not reached")
    children: list[_Child] = []
    try:
        for config in configs:
            reserve = (
                1.5 * seconds * (len(children) + 1)
            )  # the rounds still to come, this one's included
            left = deadline - time.perf_counter() - reserve
            if installed(config.backend) and left < MIN_CHILD_SECONDS:
                result.candidates[
                    config.name
                ].reason = f"the budget ({max_seconds:.0f} s) ran out before it"
                result.stopped = result.stopped or "the budget ran out"
                continue
            log.debug("advisor: backends: starting %s", config.label)
            candidate, child = start_child(
                exported,
                config,
                workdir,
                seconds=seconds,
                rounds=rounds,
                warmup=warmup,
                timeout=min(timeout, max(1.0, left)),
                torch_threads=torch_threads,
            )
            result.candidates[config.name] = candidate
            if child is not None:
                candidate.status = MEASURING
                children.append(child)
        stopped = _run_rounds(children, rounds, seconds, deadline)
        if stopped:
            result.stopped = result.stopped or stopped
    finally:
        for child in children:
            if child.candidate.status == MEASURING:
                child.candidate.status = MEASURED if child.candidate.rounds else FAILED
                if not child.candidate.rounds:
                    child.candidate.reason = "no round was measured"
            child.stop(wait=False)  # all told at once, then each waited for
        for child in children:
            child.stop()
    if exported.script_classes:
        classes = ", ".join(exported.script_classes)
        extra = (
            f"custom classes defined in the script (__main__: {classes}) cannot be imported by a fresh process; "
            "move them to a module"
        )
        result.note = f"{result.note}; {extra}" if result.note else extra
    result.seconds = time.perf_counter() - t0
    return result


def measure_backends(
    model: Any,
    data: Any,
    candidates: str | Sequence[str] | None = None,
    *,
    batch_size: int | None = None,
    seconds: float = MEASURE_SECONDS,
    rounds: int = ROUNDS,
    warmup: float = WARMUP_SECONDS,
    max_seconds: float = MAX_SECONDS,
    timeout: float = CHILD_TIMEOUT,
    torch_threads: int | None = None,
    sample: int | None = None,
) -> BackendsResult:
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
        return measure_exported(
            exported,
            own,
            candidates,
            workdir=Path(tmp),
            seconds=seconds,
            rounds=rounds,
            warmup=warmup,
            max_seconds=max_seconds,
            timeout=timeout,
            torch_threads=torch_threads,
            started=started,
        )
