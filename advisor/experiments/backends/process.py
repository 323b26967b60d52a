"""One candidate of the backend what-if in a process of its own (``child.py --serve``): started
in its own process group with the candidate's backend, waited for until it is warm, then asked
for rounds one line at a time, and stopped (its group killed) at the end. ``runner.py`` decides
which candidates start and runs their rounds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from advisor.experiments.backends.child import PREFIX
from advisor.experiments.backends.export import Exported, child_path
from advisor.experiments.backends.result import FAILED, NOT_INSTALLED, BackendCandidate, Config

STOP_SECONDS = 5.0  # a child told to stop exits within this, or is killed
GPU_SHARING = {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def installed(backend: str) -> bool:
    return importlib.util.find_spec(backend) is not None


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


class Child:
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
                # a "stop" still buffered for a child that has gone: nobody reads it
                except OSError:
                    pass


def _command(
    module: str,
    extra: tuple[str, ...],
    exported: Exported,
    config: Config,
    seconds: float,
    rounds: int,
    warmup: float,
    torch_threads: int | None,
) -> list[str]:
    """The child's command line."""
    command = [
        sys.executable,
        "-m",
        module,
        *extra,
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
    if exported.custom_path is not None:
        command += ["--custom", str(exported.custom_path)]
    for module, path in exported.ported.items():
        command += ["--ported", f"{module}={path}"]
    for module in exported.modules:
        command += ["--import", module]
    if torch_threads:
        command += ["--torch-threads", str(torch_threads)]
    return command


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
    module: str = "advisor.experiments.backends.child",
    extra: tuple[str, ...] = (),
    label: str | None = None,
) -> tuple[BackendCandidate, Child | None]:
    """One candidate in a fresh process, waited for until it is warm (its group killed on
    timeout); never raises for the child. The child is returned when it waits for rounds.
    ``module`` is the child's entry point, ``extra`` its further arguments, ``label`` the name
    of its stderr file (another experiment's children: the precision what-if's)."""
    candidate = BackendCandidate(config)
    if not installed(config.backend):
        candidate.status, candidate.reason = NOT_INSTALLED, "not installed"
        return candidate, None
    stderr = workdir / f"{label or config.name}.stderr"
    command = _command(module, extra, exported, config, seconds, rounds, warmup, torch_threads)
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
    child = Child(candidate, proc, stderr)
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
