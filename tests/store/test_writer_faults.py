"""The writer under write errors (injected at advisor.store.atomic_writes._write, exactly as the
kernel raises them): nothing torn, one warning per kind, the end record where space allows, no half
runs, no two jobs merged into one run, heartbeats when idle."""

from __future__ import annotations

import errno
import json
import logging
import os
import time

import pytest

from advisor.store import atomic_writes as files
from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.schema import EndRecord, EpochRecord, HeartbeatRecord, WindowRecord
from advisor.store.writer import RunWriter


def window(i: int) -> WindowRecord:
    return WindowRecord(
        t=time.time(),
        epoch=0,
        seconds=1.0,
        steps=10,
        samples=320,
        step_begin=10 * i,
        step_end=10 * (i + 1),
        warmup=i == 0,
    )


class Disk:
    """A fault switch on the one write function of the store."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = files._write
        self.code: int | None = None
        self.partial = False
        monkeypatch.setattr(files, "_write", self.write)

    def write(self, fd: int, data: memoryview) -> int:
        if self.code is None:
            return self.real(fd, data)
        if self.partial and len(data) > 10:  # the kernel took some bytes, then the disk filled
            self.partial = False
            return self.real(fd, data[:10])
        raise OSError(self.code, os.strerror(self.code))


def test_a_full_disk_drops_records_warns_once_and_the_end_record_follows(
    runs_dir, monkeypatch, caplog
):
    disk = Disk(monkeypatch)
    writer = RunWriter(runs_dir, manifest={"global_batch_size": 32})
    writer.write(window(0))
    writer.write(window(1))
    disk.code, disk.partial = errno.ENOSPC, True
    with caplog.at_level(logging.WARNING, logger="advisor"):
        for i in range(2, 6):
            writer.write(window(i))  # never raises into training
        writer.write(EpochRecord(t=time.time(), epoch=0, seconds=4, train_seconds=4, steps=60))
        disk.code = None  # space returns
        writer.write(window(6))
        writer.close()
    warnings = [r.getMessage() for r in caplog.records if "cannot write" in r.getMessage()]
    assert len(warnings) == 1 and "No space left on device" in warnings[0]
    for line in (writer.path / "worker-0.jsonl").read_bytes().splitlines():
        json.loads(line)  # the write cut short was rolled back: no torn line in the middle
    run = RunReader(writer.path).read()
    assert [w.step_begin for w in run.of_type(WindowRecord)] == [0, 10, 60]
    assert run.status == "finished" and run.of_type(EndRecord)[0].dropped_records == 5
    assert "5 records were lost" in run.incomplete[0]


def test_each_kind_of_fault_warns_once(runs_dir, monkeypatch, caplog):
    disk = Disk(monkeypatch)
    writer = RunWriter(runs_dir, manifest={})
    with caplog.at_level(logging.WARNING, logger="advisor"):
        for code in (errno.ENOSPC, errno.ENOSPC, errno.EROFS, errno.EIO, errno.EROFS):
            disk.code = code
            writer.write(window(0))
        disk.code = errno.EROFS
        writer.close()  # end record and manifest both fail: still no exception
    messages = [r.getMessage() for r in caplog.records if "cannot write" in r.getMessage()]
    assert len(messages) == 3
    assert RunReader(writer.path).read().manifest.status == "running"  # could not be replaced


def test_a_failed_manifest_update_leaves_no_temporary_file(runs_dir, monkeypatch):
    disk = Disk(monkeypatch)
    writer = RunWriter(runs_dir, manifest={})
    disk.code = errno.ENOSPC
    writer.update_manifest(strategy="MirroredStrategy")
    disk.code = None
    assert [p.name for p in writer.path.iterdir() if p.name.endswith(".tmp")] == []
    writer.close()
    assert RunReader(writer.path).read().manifest.strategy == "MirroredStrategy"


def test_a_start_that_cannot_be_written_leaves_no_phantom_run(runs_dir, monkeypatch):
    disk = Disk(monkeypatch)
    disk.code = errno.ENOSPC
    with pytest.raises(OSError):
        RunWriter(runs_dir, manifest={})
    assert list(runs_dir.iterdir()) == [] and list_run_dirs(runs_dir) == []


def test_an_empty_or_missing_manifest_is_not_a_run(runs_dir):
    (runs_dir / "half" / "traces").mkdir(parents=True)
    (runs_dir / "half" / ".run.json.1.abc.tmp").write_text("{")
    (runs_dir / "empty").mkdir()
    (runs_dir / "empty" / "run.json").write_text("")
    assert list_run_dirs(runs_dir) == []


def test_a_reused_run_id_opens_a_new_attempt(runs_dir, monkeypatch, caplog):
    monkeypatch.setenv("ADVISOR_RUN_ID", "job-42")
    first = RunWriter(runs_dir, manifest={"tags": {"job": "first"}, "num_workers": 2})
    first.write(window(0))
    other_rank = RunWriter(runs_dir, rank=1)  # the same job's second worker joins the same run
    with caplog.at_level(logging.WARNING, logger="advisor"):
        second = RunWriter(runs_dir, manifest={"tags": {"job": "second"}})
    second.write(window(0))
    for w in (first, other_rank, second):
        w.close()
    assert (first.run_id, other_rank.run_id, second.run_id) == ("job-42", "job-42", "job-42.2")
    assert any("recorded as run job-42.2" in r.getMessage() for r in caplog.records)
    one, two = RunReader(runs_dir / "job-42").read(), RunReader(runs_dir / "job-42.2").read()
    assert one.ranks == [0, 1] and one.manifest.tags == {"job": "first"}
    assert two.ranks == [0] and two.manifest.tags == {"job": "second"} and two.run_id == "job-42.2"
    assert len(one.of_type(WindowRecord)) == 1 and len(two.of_type(WindowRecord)) == 1


def test_an_idle_writer_writes_heartbeats(runs_dir, monkeypatch):
    writer = RunWriter(runs_dir, manifest={})
    writer.heartbeat()  # just wrote the start record: nothing to say yet
    monkeypatch.setattr(writer, "_last_write", time.monotonic() - 3600)
    writer.heartbeat()
    writer.close()
    run = RunReader(writer.path).read()
    assert len(run.of_type(HeartbeatRecord)) == 1 and run.unknown_records == 0


def test_non_finite_values_are_written_as_strict_json(runs_dir):
    writer = RunWriter(runs_dir, manifest={})
    writer.write({"type": "gpu", "index": 0, "util": float("nan"), "power_w": float("inf")})
    writer.close()
    last = (writer.path / "worker-0.jsonl").read_text().splitlines()[1]
    assert "NaN" not in last and "Infinity" not in last and json.loads(last)["util"] is None


def test_an_end_record_lost_to_a_full_disk_is_said_by_the_writer_and_the_reader(
    runs_dir, monkeypatch, caplog
):
    """The worker file is full when the run closes, the manifest can still be replaced: the run
    reads as finished, with the reason its end record is missing, and training does not say
    'run written'."""
    from advisor.collectors.opening import report_closed

    real = files._write

    def records_full(fd: int, data: memoryview) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    writer = RunWriter(runs_dir, manifest={"global_batch_size": 32})
    writer.write(window(0))
    writer.write(window(1))
    monkeypatch.setattr(files, "_write", records_full)
    with caplog.at_level(logging.INFO, logger="advisor"):
        writer.close()
        report_closed(writer, writer.path)
    assert writer.end_lost == "No space left on device"
    messages = [r.getMessage() for r in caplog.records]
    assert not any("written to" in m for m in messages)
    assert any(
        f"run {writer.run_id} in {writer.path} is not complete: "
        "its end record could not be written (No space left on device)" in m
        for m in messages
    )
    run = RunReader(writer.path).read()
    assert (
        run.manifest.end_record_lost == "No space left on device"
        and run.manifest.dropped_records == 1
    )
    assert run.status == "finished" and run.of_type(EndRecord) == []
    assert (
        "worker-0.jsonl: the end record was lost to a write error (No space left on device); "
        "run.json says 'finished'"
    ) in run.incomplete


def test_a_closed_run_with_its_end_record_says_where_it_was_written(runs_dir, caplog):
    from advisor.collectors.opening import report_closed

    writer = RunWriter(runs_dir, manifest={})
    writer.write(window(0))
    with caplog.at_level(logging.INFO, logger="advisor"):
        writer.close()
        report_closed(writer, writer.path)
    assert writer.end_lost is None
    assert [r.getMessage() for r in caplog.records] == [
        f"advisor: run {writer.run_id} written to {writer.path}"
    ]
