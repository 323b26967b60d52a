"""Status from the records: an end record wins over the manifest, heartbeats tell live from
killed, pids count only on the machine that wrote them, workers combine, and what is judgeable."""

from __future__ import annotations

import time

from advisor.store.schema import (
    EndRecord,
    EventRecord,
    HeartbeatRecord,
    Manifest,
    StartRecord,
    WindowRecord,
)
from advisor.store.status import STALE_AFTER_S, derive_status, incomplete_reasons, local_scope

NOW = 1_764_000_000.0
FOREIGN = "another-boot/pid:[1]"


def manifest(status: str = "running", **fields) -> Manifest:
    return Manifest.model_validate(
        {"run_id": "r", "created": NOW - 500, "status": status, **fields}
    )


def window(t: float, warmup: bool = False) -> WindowRecord:
    return WindowRecord(
        t=t, epoch=0, seconds=1.0, steps=10, samples=320, step_begin=0, step_end=10, warmup=warmup
    )


def start(t: float, scope: str | None = FOREIGN, pid: int | None = 1) -> StartRecord:
    return StartRecord(t=t, pid=pid, scope=scope)


def test_an_end_record_means_ended_whatever_the_manifest_says():
    records = {0: [start(NOW - 100), window(NOW - 50), EndRecord(t=NOW - 40)]}
    assert derive_status(manifest("running"), records, NOW)[0] == "finished"
    failed = {0: [start(NOW - 100), EndRecord(t=NOW - 40, status="failed")]}
    assert derive_status(manifest("running"), failed, NOW)[0] == "failed"


def test_a_closed_manifest_stands_in_for_a_lost_end_record():
    records = {0: [start(NOW - 1000), window(NOW - 900)]}
    assert derive_status(manifest("finished"), records, NOW)[0] == "finished"


def test_heartbeats_tell_live_from_killed_for_a_foreign_writer():
    records = {0: [start(NOW - 1000), window(NOW - 900), HeartbeatRecord(t=NOW - 10)]}
    assert derive_status(manifest(), records, NOW)[0] == "running"
    assert derive_status(manifest(), records, NOW + STALE_AFTER_S)[0] == "killed"


def test_a_local_pid_decides_at_once():
    live = {0: [start(NOW - 1000, scope=local_scope(), pid=__import__("os").getpid())]}
    assert derive_status(manifest(), live, NOW + 10**6)[0] == "running"  # alive, however old
    dead = {0: [start(time.time(), scope=local_scope(), pid=2**31 - 2)]}
    assert derive_status(manifest(), dead, time.time())[0] == "killed"  # gone, however fresh


def test_a_pid_from_another_machine_is_ignored():
    records = {0: [start(NOW - 1000, scope=FOREIGN, pid=__import__("os").getpid())]}
    assert derive_status(manifest(), records, NOW)[0] == "killed"


def test_trace_records_attached_later_are_not_heartbeats():
    from advisor.store.schema import TraceRecord

    records = {0: [start(NOW - 1000), window(NOW - 900), TraceRecord(t=NOW - 1, path="traces/x")]}
    assert derive_status(manifest(), records, NOW)[0] == "killed"


def test_workers_combine_running_then_killed_then_failed_then_finished():
    done = [start(NOW - 100), EndRecord(t=NOW - 50)]
    killed = [start(NOW - 1000)]
    failed = [start(NOW - 100), EndRecord(t=NOW - 50, status="failed")]
    live = [start(NOW - 100), HeartbeatRecord(t=NOW - 1)]
    m = manifest()
    assert derive_status(m, {0: done, 1: done}, NOW)[0] == "finished"
    assert derive_status(m, {0: failed, 1: killed}, NOW)[0] == "killed"
    assert derive_status(m, {0: done, 1: failed}, NOW)[0] == "failed"
    assert derive_status(m, {0: failed, 1: live}, NOW)[0] == "running"


def test_a_terminated_worker_is_the_cause_unless_another_failed_or_was_killed_first():
    """SIGTERM (preemption) ends a run as terminated, also when a peer then failed; a worker that
    failed or was killed (an OOM kill, SIGKILL) before any was terminated — the launcher then
    stops the others with SIGTERM — makes the run failed or killed. A preempted worker gets the
    signal and its grace period to write its end record, so one without any, last seen before
    its peers closed, died of something else."""
    m = manifest()
    stopped = [start(NOW - 100), EndRecord(t=NOW - 50, status="terminated", signal="SIGTERM")]
    failed_after = [start(NOW - 100), EndRecord(t=NOW - 40, status="failed")]
    failed_before = [start(NOW - 100), EndRecord(t=NOW - 60, status="failed")]
    killed_before = [start(NOW - 1000)]
    stopped_early = [
        start(NOW - 900),
        EndRecord(t=NOW - 500, status="terminated", signal="SIGTERM"),
    ]
    killed_after = [start(NOW - 900), window(NOW - 450)]  # seen after its peer closed, then gone
    assert derive_status(m, {0: stopped, 1: stopped}, NOW)[0] == "terminated"
    assert derive_status(m, {0: stopped, 1: failed_after}, NOW)[0] == "terminated"
    assert derive_status(m, {0: stopped_early, 1: killed_after}, NOW)[0] == "terminated"
    assert derive_status(m, {0: stopped, 1: killed_before}, NOW)[0] == "killed"
    assert derive_status(m, {0: stopped, 1: failed_before}, NOW)[0] == "failed"
    both = {0: stopped, 1: failed_before, 2: killed_before}
    assert derive_status(m, both, NOW)[0] == "killed"  # the kill came first (NOW - 1000)


def test_a_manifest_alone_is_judged_by_its_own_times():
    assert derive_status(manifest(updated=NOW - 5, scope=FOREIGN), {}, NOW)[0] == "running"
    assert derive_status(manifest(updated=NOW - 5000, scope=FOREIGN), {}, NOW)[0] == "killed"


def test_incomplete_reasons():
    good = [start(NOW - 10), window(NOW - 9, warmup=True), window(NOW - 8), EndRecord(t=NOW - 1)]
    status, states = derive_status(manifest(), {0: good}, NOW)
    assert incomplete_reasons(status, states, good, []) == []
    empty = [start(NOW - 10), window(NOW - 9, warmup=True), EndRecord(t=NOW - 1)]
    assert "no throughput measured" in incomplete_reasons("finished", states, empty, [])[0]
    broken = [
        *good,
        EventRecord(
            t=NOW, level="error", source="throughput", message="throughput collector failed"
        ),
    ]
    assert incomplete_reasons("finished", states, broken, []) == [
        "collector 'throughput' failed: throughput collector failed"
    ]
    lost = [*good[:-1], EndRecord(t=NOW - 1, dropped_records=7)]
    assert (
        "7 records were lost to write errors" in incomplete_reasons("finished", states, lost, [])[0]
    )
    assert incomplete_reasons("finished", states, good, ["worker-1.jsonl: not a regular file"]) == [
        "worker-1.jsonl: not a regular file"
    ]
