"""Run the processes of one configuration on this machine, as one process group.

The configuration succeeds when every process exits 0. The first process to exit otherwise
fails it at once (survivors of a multi-worker job would only notice after several seconds of
missed heartbeats); so does the timeout. Whatever happens, the whole process group is terminated
before returning, so no worker — nor anything a worker started — outlives its configuration.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.launch.logpipe import RedactedLog
from advisor.launch.plan import ProcessSpec, merged_env

# absl / TF informational lines that crowd out the real error in a log tail.
_NOISE = re.compile(r"^(?:[IW]\d{4} |WARNING: All log messages before absl|\s*$)")
TAIL_LINES = 15
TERM_GRACE_S = 3.0


@dataclass
class Outcome:
    """How one configuration ended."""

    status: str  # finished | failed
    seconds: float
    reason: str = ""
    log_tail: str = ""
    returncodes: dict[int, int | None] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # ray: where the workers ran
    job_id: str | None = None  # ray: the driver's job
    actors: list[str] = field(default_factory=list)  # ray: each rank's actor id
    timed_out: bool = False  # stopped by the launcher at --timeout (its SIGTERM: no preemption)


def describe_exit(rank: int, code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if name == "SIGTERM":  # told to stop (preempted, evicted, cancelled): not a crash
            return f"worker {rank} was terminated by SIGTERM (preempted, evicted or cancelled)"
        return f"worker {rank} was killed by {name}"
    return f"worker {rank} exited with code {code}"


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last meaningful lines of a log (informational absl noise left out)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64_000))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if not _NOISE.match(line)]
    return "\n".join(kept[-lines:])


def run_local(
    specs: Sequence[ProcessSpec],
    log_dir: Path,
    timeout_s: float | None,
    on_tick: Callable[[float], None] | None = None,
    poll_s: float = 0.2,
) -> Outcome:
    """Start ``specs`` in one new process group, wait, and clean up; never raises for a failure
    of the training job itself (only ``KeyboardInterrupt`` passes, after the cleanup)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    procs: list[tuple[ProcessSpec, subprocess.Popen[bytes]]] = []
    logs: list[RedactedLog] = []
    pgid: int | None = None
    t0 = time.monotonic()
    try:
        for spec in specs:
            env = merged_env(spec.env)
            logs.append(RedactedLog(log_dir / spec.log_name, spec.argv, env))
            group = _group_kwargs(pgid)
            try:
                proc = subprocess.Popen(
                    spec.argv,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    **group,  # type: ignore[call-overload]
                )
            except OSError as exc:
                return Outcome(
                    "failed",
                    time.monotonic() - t0,
                    f"cannot start {spec.argv[0]!r}: {exc}",
                    logs=[str(log_dir / s.log_name) for s in specs],
                )
            if pgid is None:
                pgid = proc.pid
            procs.append((spec, proc))
            logs[-1].follow(proc.stdout)  # type: ignore[arg-type]
        outcome, tail_of = _wait(procs, log_dir, timeout_s, on_tick, poll_s, t0)
    finally:
        if pgid is not None:
            kill_group(pgid, [p for _, p in procs])
        for redacted in logs:
            redacted.close()  # the pipes drained: each log holds its process's last lines
    if tail_of is not None:
        outcome.log_tail = log_tail(tail_of)
    return outcome


def _group_kwargs(pgid: int | None) -> dict[str, Any]:
    """Popen arguments that put the child in a new process group (``pgid`` None) or in ``pgid``.

    A group in our own session: a process group cannot span sessions, so no ``start_new_session``.
    """
    target = 0 if pgid is None else pgid
    if sys.version_info >= (3, 11):
        return {"process_group": target}
    return {"preexec_fn": lambda: os.setpgid(0, target)}  # pragma: no cover (Python 3.10)


def _wait(
    procs: list[tuple[ProcessSpec, subprocess.Popen[bytes]]],
    log_dir: Path,
    timeout_s: float | None,
    on_tick: Callable[[float], None] | None,
    poll_s: float,
    t0: float,
) -> tuple[Outcome, Path | None]:
    """How the processes ended, and the log whose tail says why (read once its pipe drained)."""
    logs = [str(log_dir / spec.log_name) for spec, _ in procs]
    while True:
        codes = {spec.rank: proc.poll() for spec, proc in procs}
        elapsed = time.monotonic() - t0
        bad = [(spec, proc.returncode) for spec, proc in procs if proc.returncode not in (None, 0)]
        if bad:
            spec, code = bad[0]
            failed = Outcome("failed", elapsed, describe_exit(spec.rank, code), "", codes, logs)
            return failed, log_dir / spec.log_name
        if all(code == 0 for code in codes.values()):
            return Outcome("finished", elapsed, returncodes=codes, logs=logs), None
        if timeout_s is not None and elapsed > timeout_s:
            waiting = [spec.rank for spec, proc in procs if proc.returncode is None]
            chief = procs[0][0]
            reason = f"timed out after {timeout_s:g} s (workers still running: {waiting})"
            ended = Outcome("failed", elapsed, reason, "", codes, logs, timed_out=True)
            return ended, log_dir / chief.log_name
        if on_tick is not None:
            on_tick(elapsed)
        time.sleep(poll_s)


def kill_group(
    pgid: int, procs: Sequence[subprocess.Popen[bytes]], grace_s: float = TERM_GRACE_S
) -> None:
    """SIGTERM the group, give it ``grace_s`` to exit, then SIGKILL it; reap our children."""
    if _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            children_alive = [p for p in procs if p.poll() is None]  # poll() also reaps
            if not children_alive and not _group_alive(pgid):
                break
            time.sleep(0.05)
        _signal_group(pgid, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    """A live (non-zombie) process is left in the group. Orphans that died wait as zombies until
    PID 1 reaps them, which in containers may be never: they do not count."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    import psutil

    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False
