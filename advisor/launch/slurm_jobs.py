"""Follow submitted Slurm jobs until they end, and say how each ended.

A job's state comes from ``sacct`` where accounting is on; else from ``scontrol show job`` (which
keeps a finished job for ``MinJobAge``, 300 s by default); else from ``squeue`` while it is queued
or running and, once it has left the queue, from the exit file its batch script wrote (``exit-<job
id>``). A job that has left without one ended for an unknown reason: it is failed, never left
``submitted``. A job pending for a reason that waiting cannot clear is cancelled at once
(``slurm_pending``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.launch.slurm import exit_file
from advisor.launch.slurm_pending import cannot_start
from advisor.launch.slurm_text import Runner, parse_scontrol, run_seconds, run_slurm

ACTIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESV_DEL_HOLD",
        "STOPPED",
    }
)
STARTED = frozenset({"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT"})


@dataclass
class JobState:
    """One job as Slurm (or its exit file) sees it."""

    state: str  # Slurm's JobState: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, …
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None  # Slurm's Reason (why pending, why it failed)
    nodes: list[str] = field(default_factory=list)
    source: str = "scontrol"  # sacct | scontrol | squeue | exit-file | none
    seconds: float | None = None  # the job's run time by Slurm (whole seconds)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def started(self) -> bool:
        return self.state in STARTED

    @property
    def succeeded(self) -> bool:
        return self.state == "COMPLETED" and not self.exit_code and not self.signal

    def describe(self, job_id: str) -> str:
        """One line on how the job ended, e.g. ``Slurm job 12 FAILED, exit code 1
        (NonZeroExitCode)``."""
        text = f"Slurm job {job_id} {self.state}"
        if self.exit_code:
            text += f", exit code {self.exit_code}"
        if self.signal:
            text += f", signal {self.signal}"
        if self.reason and self.reason not in ("None", "(null)"):
            text += f" ({self.reason})"
        return text


def _exit_code(text: str) -> tuple[int | None, int | None]:
    """Slurm's ``ExitCode`` ``"1:0"`` → (1, 0) (code, signal)."""
    code, _, sig = text.partition(":")
    try:
        return int(code), (int(sig) if sig else None)
    except ValueError:
        return None, None


def _hostnames(nodelist: str, run: Runner) -> list[str]:
    if not nodelist or nodelist in ("(null)", "None assigned", "None"):
        return []
    out = run(["scontrol", "show", "hostnames", nodelist])
    return out.split() if out else [nodelist]


def from_sacct(job_id: str, run: Runner = run_slurm) -> JobState | None:
    out = run(
        [
            "sacct",
            "-n",
            "-P",
            "-X",
            "-j",
            job_id,
            "-o",
            "JobIDRaw,State,ExitCode,NodeList,ElapsedRaw,Reason",
        ]
    )
    for line in (out or "").splitlines():
        parts = line.split("|")
        if len(parts) >= 5 and parts[0] == job_id:
            code, sig = _exit_code(parts[2])
            return JobState(
                parts[1].split()[0],
                code,
                sig,
                parts[5] if len(parts) > 5 else None,
                _hostnames(parts[3], run),
                "sacct",
                run_seconds(parts[4]),
            )
    return None


def from_scontrol(job_id: str, run: Runner = run_slurm) -> JobState | None:
    out = run(["scontrol", "-o", "show", "job", job_id])
    if not out or "JobState=" not in out:
        return None
    f = parse_scontrol(out.splitlines()[0])
    code, sig = _exit_code(f.get("ExitCode", ""))
    return JobState(
        f["JobState"],
        code,
        sig,
        f.get("Reason"),
        _hostnames(f.get("NodeList", ""), run),
        seconds=run_seconds(f.get("RunTime", "")),
    )


def from_squeue(job_id: str, log_dir: Path | None, run: Runner = run_slurm) -> JobState:
    out = run(["squeue", "-h", "-j", job_id, "-o", "%T|%r|%N"])
    line = (out or "").strip().splitlines()
    if line:
        state, _, rest = line[0].partition("|")
        reason, _, nodes = rest.partition("|")
        return JobState(state, reason=reason, nodes=_hostnames(nodes, run), source="squeue")
    file = exit_file(log_dir, job_id) if log_dir is not None else None
    if file is not None and file.is_file():
        try:
            code = int(file.read_text().strip() or "1")
        except ValueError:
            code = 1
        return JobState("COMPLETED" if code == 0 else "FAILED", code, source="exit-file")
    return JobState(
        "UNKNOWN",
        reason="the job left the queue without an exit file "
        "(cancelled before its step ended, or the log directory is not shared)",
        source="none",
    )


def job_state(job_id: str, log_dir: Path | None = None, run: Runner = run_slurm) -> JobState:
    """The job's state from the best source this cluster has (module docstring)."""
    return (
        from_sacct(job_id, run) or from_scontrol(job_id, run) or from_squeue(job_id, log_dir, run)
    )


def cancel(job_id: str, run: Runner = run_slurm) -> None:
    run(["scancel", job_id])


@dataclass
class Ended:
    """How a followed job ended."""

    state: JobState
    seconds: float | None  # from when it was seen running; None if it ended unseen
    timed_out: bool = False
    cannot_start: str | None = None  # pending for a reason waiting cannot clear: the fix

    def describe(self, job_id: str) -> str:
        """One line on how the job ended (a job cancelled because it could never start says
        Slurm's reason and the fix)."""
        if self.cannot_start:
            return (
                f"Slurm job {job_id} could not start: pending for {self.state.reason}, which "
                f"waiting cannot clear; cancelled. Fix: {self.cannot_start}"
            )
        return self.state.describe(job_id)


def follow(
    job_id: str,
    log_dir: Path | None,
    timeout_s: float | None = None,
    on_start: Callable[[JobState], None] | None = None,
    on_tick: Callable[[float], None] | None = None,
    poll_s: float = 1.0,
    run: Runner = run_slurm,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Ended:
    """Poll the job until it ends. Once running, a job still running ``timeout_s`` later (Slurm's
    own ``--time`` missed it) is cancelled and reported as timed out; a job pending for a reason
    that waiting cannot clear (``slurm_pending``) is cancelled at once."""
    started_at: float | None = None
    while True:
        state = job_state(job_id, log_dir, run)
        now = clock()
        fix = cannot_start(state.reason, run) if state.state == "PENDING" else None
        if fix is not None:
            cancel(job_id, run)
            return Ended(state, None, cannot_start=fix)
        if started_at is None and state.started:
            started_at = now
            if on_start is not None:
                on_start(state)
        if not state.active:
            return Ended(state, now - started_at if started_at is not None else None)
        if started_at is not None:
            if on_tick is not None:
                on_tick(now - started_at)
            if timeout_s is not None and now - started_at > timeout_s:
                cancel(job_id, run)
                return Ended(state, now - started_at, timed_out=True)
        sleep(poll_s)
