"""A run's status from its records, liveness from heartbeats, and whether it can be judged.

The records decide: an ``end`` record means the worker ended (finished, failed, or terminated by
SIGTERM: preempted, evicted, cancelled) whatever the manifest says — after a full disk the
manifest may never have been updated. A worker without an
end record is alive while its writer's heartbeat is fresh (the writer writes one at least every
``HEARTBEAT_S`` seconds) and killed once it is older than ``STALE_AFTER_S``. On the machine that
wrote it (same kernel boot and PID namespace, recorded as ``scope``) a dead process is known at
once. A copied run is judged by the times written in it, never by local file times or pids.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor.store.schema import (
    EndRecord,
    EventRecord,
    FactsRecord,
    Manifest,
    Record,
    StartRecord,
    Status,
    TraceRecord,
    WindowRecord,
)

HEARTBEAT_S = 15.0
STALE_AFTER_S = 120.0
# Attached afterwards by `advisor trace` and imports: not a sign that the writer is alive.
_ATTACHED = (TraceRecord, FactsRecord)
# A run is as far from finished as its least finished worker: a killed worker is the cause when
# the others then fail (their collectives time out); a terminated one (SIGTERM: preemption) is the
# cause when others failed after it (their peers left) — unless one failed or was killed first
# (``_cause_before_terminated``: the launcher then stops the others with SIGTERM).
_ORDER: dict[str, int] = {"running": 0, "terminated": 1, "killed": 2, "failed": 3, "finished": 4}

Liveness = Literal["alive", "dead", "unknown"]


def process_scope() -> str | None:
    """This kernel boot and PID namespace: pids written under the same scope are comparable."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, UnicodeDecodeError):
        return None
    return f"{boot}/{namespace}" if boot else None


_LOCAL_SCOPE: list[str | None] = []


def local_scope() -> str | None:
    if not _LOCAL_SCOPE:
        _LOCAL_SCOPE.append(process_scope())
    return _LOCAL_SCOPE[0]


def pid_liveness(pid: object, scope: object) -> Liveness:
    """Whether ``pid`` (written under ``scope``) is a live process on this machine."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:
        return "unknown"
    if not isinstance(scope, str) or scope != local_scope():
        return "unknown"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except (PermissionError, OSError, OverflowError):
        return "alive"
    # A zombie (exited, not yet reaped) still answers kill(0); it is not running.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return "dead" if fh.read().rsplit(")", 1)[1].split()[0] == "Z" else "alive"
    except (OSError, IndexError, UnicodeDecodeError):
        return "alive"


@dataclass(frozen=True)
class WorkerState:
    """One worker's status and the last time its writer was seen."""

    rank: int
    status: Status
    last_seen: float | None


def last_seen(records: Sequence[Record]) -> float | None:
    """The time of the last record the writer itself wrote (heartbeats included)."""
    for record in reversed(records):
        if not isinstance(record, _ATTACHED):
            return record.t
    return None


def worker_state(rank: int, records: Sequence[Record], now: float) -> WorkerState:
    seen = last_seen(records)
    end = next((r for r in reversed(records) if isinstance(r, EndRecord)), None)
    if end is not None:
        return WorkerState(rank, end.status, seen)
    start = next((r for r in reversed(records) if isinstance(r, StartRecord)), None)
    live = pid_liveness(start.pid, start.scope) if start is not None else "unknown"
    if live == "unknown":
        live = "alive" if seen is not None and now - seen <= STALE_AFTER_S else "dead"
    return WorkerState(rank, "running" if live == "alive" else "killed", seen)


def manifest_state(manifest: Manifest, now: float) -> Status:
    """The status of a run without any record: the manifest's, with liveness of a running one."""
    if manifest.status != "running":
        return manifest.status
    live = pid_liveness(manifest.pid, manifest.scope)
    if live == "unknown":
        seen = max(t for t in (manifest.created, manifest.updated) if t is not None)
        live = "alive" if now - seen <= STALE_AFTER_S else "dead"
    return "running" if live == "alive" else "killed"


def status_label(status: str, signal: str | None = None) -> str:
    """The status as the listings say it: ``terminated (SIGTERM)`` names its signal."""
    return f"{status} ({signal})" if status == "terminated" and signal else status


def derive_status(
    manifest: Manifest, records: dict[int, list[Record]], now: float | None = None
) -> tuple[Status, dict[int, WorkerState]]:
    """The run's status and each worker's. Running beats killed beats failed beats finished."""
    now = time.time() if now is None else now
    states = {rank: worker_state(rank, recs, now) for rank, recs in records.items()}
    chief = min(states) if states else None
    if (
        chief is not None
        and manifest.status != "running"
        and states[chief].status in ("killed", "running")
    ):
        # The chief closed the manifest but its end record was lost (e.g. a full disk); its
        # process may live on (a notebook), which does not make the closed run running.
        states[chief] = WorkerState(chief, manifest.status, states[chief].last_seen)
    if not states:
        return manifest_state(manifest, now), states
    status = min((s.status for s in states.values()), key=lambda s: _ORDER[s])
    if status == "terminated":
        # a worker failed or was killed, and the others were then stopped (SIGTERM)
        status = _cause_before_terminated(states.values()) or status
    return status, states


def _cause_before_terminated(states: Iterable[WorkerState]) -> Status | None:
    """``failed`` or ``killed`` where a worker ended so before any was terminated: that is the
    cause (a launcher stops the survivors of a failed configuration with SIGTERM), not a
    preemption. A failure beats a kill at the same time."""
    ended = {"failed": math.inf, "killed": math.inf, "terminated": math.inf}
    for state in states:
        if state.status in ended and state.last_seen is not None:
            ended[state.status] = min(ended[state.status], state.last_seen)
    first = min(("failed", "killed"), key=lambda s: ended[s])
    return first if ended[first] < ended["terminated"] else None


def incomplete_reasons(
    status: Status,
    states: dict[int, WorkerState],
    records: Iterable[Record],
    problems: Sequence[str],
    expects_throughput: bool = True,
) -> list[str]:
    """Why a run cannot be judged: killed, still running, failed, empty, a collector failed,
    or files that could not be read. Empty when the run is complete. A run imported from
    elsewhere (``expects_throughput=False``: no throughput collector ran) is not called empty."""
    reasons: list[str] = []
    if status == "running":
        reasons.append("the run is still running (its writer's heartbeat is recent)")
    for kind, what in (
        ("terminated", "was terminated by SIGTERM (preempted, evicted or cancelled)"),
        ("killed", "was killed: no end record, and its writer is gone"),
        ("failed", "failed: fit() ended with an exception"),
    ):
        ranks = [str(s.rank) for s in states.values() if s.status == kind]
        if ranks and len(states) > 1:
            reasons.append(f"worker {', '.join(ranks)} {what}")
        elif status == kind:
            reasons.append(f"the run {what}")
    measured = False
    dropped = 0
    failures: list[str] = []
    for record in records:
        if isinstance(record, EndRecord):
            dropped += record.dropped_records or 0
        elif isinstance(record, WindowRecord):
            if not (record.warmup or record.profiled) and record.seconds > 0 and record.steps > 0:
                measured = True
        elif (
            isinstance(record, EventRecord)
            and record.level == "error"
            and record.source != "advisor"
        ):
            failures.append(f"collector {record.source!r} failed: {record.message}")
    if not measured and expects_throughput:
        reasons.append(
            "no throughput measured (no training window after warm-up): train for longer than "
            "warmup_steps plus one window_s, and keep the throughput collector on"
        )
    if dropped:
        reasons.append(
            f"{dropped} records were lost to write errors while training (disk full or a "
            "read-only store: see the warning the training job printed)"
        )
    reasons.extend(dict.fromkeys(failures))
    reasons.extend(problems)
    return reasons
