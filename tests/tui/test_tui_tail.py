"""Following a growing run: only appended bytes are parsed, a half-written line waits for its end,
a malformed line is an error naming file and line, and the live series turn final at the end."""

from __future__ import annotations

import pytest

from advisor.service.live import LiveRun
from advisor.store.schema import EpochRecord, GpuSample, HostSample, WindowRecord
from advisor.store.tail import RecordTail
from advisor.store.writer import RunWriter


def window(t: float, i: int, samples: int = 640, warmup: bool = False) -> WindowRecord:
    return WindowRecord(
        t=t,
        epoch=0,
        seconds=1.0,
        steps=10,
        samples=samples,
        step_begin=10 * i,
        step_end=10 * (i + 1),
        warmup=warmup,
    )


def test_tail_reads_only_what_was_appended(runs_dir):
    writer = RunWriter(runs_dir, "r1", manifest={"created": 1000.0})
    tail = RecordTail(writer.path)
    first = tail.poll()
    assert [r.type for _, r in first] == ["start"]
    assert tail.poll() == []
    writer.write(window(1001.0, 0))
    writer.write(window(1002.0, 1))
    got = tail.poll()
    assert [(rank, r.type, r.t) for rank, r in got] == [
        (0, "window", 1001.0),
        (0, "window", 1002.0),
    ]
    assert tail.status() == "running"  # this process is the writer, and it is alive
    writer.close("finished")
    assert [r.type for _, r in tail.poll()] == ["end"]
    assert tail.status() == "finished"


def test_tail_waits_for_a_half_written_line(runs_dir):
    writer = RunWriter(runs_dir, "r2", manifest={"created": 1000.0})
    tail = RecordTail(writer.path)
    tail.poll()
    line = window(1001.0, 0).model_dump_json(exclude_none=True) + "\n"
    with open(writer.path / "worker-0.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line[:25])
        fh.flush()
        assert tail.poll() == []  # not a record yet
        fh.write(line[25:])
    assert [r.type for _, r in tail.poll()] == ["window"]


def test_tail_skips_and_names_a_malformed_line(runs_dir):
    writer = RunWriter(runs_dir, "r3", manifest={"created": 1000.0})
    tail = RecordTail(writer.path)
    tail.poll()
    with open(writer.path / "worker-0.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{broken\n")
    writer.write(
        EpochRecord(t=1001.0, epoch=0, seconds=1.0, train_seconds=1.0, steps=10, samples=320)
    )
    new = (
        tail.poll()
    )  # the bad line is skipped, as the reader skips it; the next record still comes
    assert [type(r).__name__ for _, r in new] == ["EpochRecord"]
    assert len(tail.problems) == 1 and tail.problems[0].startswith("worker-0.jsonl:2:")


def test_live_run_series_and_the_final_turn(runs_dir):
    writer = RunWriter(runs_dir, "r4", manifest={"created": 1000.0})
    other = RunWriter(runs_dir, "r4", rank=1)
    live = LiveRun(writer.path)
    snap, changed = live.poll()
    assert changed and snap.status == "running" and snap.throughput == ()
    writer.write(window(1001.0, 0, warmup=True))
    writer.write(window(1002.0, 1, samples=640))
    writer.write(window(1003.0, 2, samples=1280))
    other.write(window(1003.0, 2, samples=99_999))  # rank 1 records the global batch too: not added
    writer.write(GpuSample(t=1002.5, index=0, util=80.0))
    writer.write(HostSample(t=1002.5, cpu_percent=[50.0, 70.0]))
    snap, changed = live.poll()
    assert changed
    assert snap.throughput == ((2.0, 640.0), (3.0, 1280.0))
    assert snap.warmup_windows == 1 and snap.samples == 1920
    assert snap.gpu_util == {0: ((2.5, 80.0),)} and snap.cpu_util == ((2.5, 60.0),)
    assert snap.samples_per_s == 1280.0 and snap.mean_samples_per_s == 960.0
    assert live.poll()[1] is False, "nothing new, nothing to redraw"
    other.close()
    writer.close("finished")
    snap, changed = live.poll()
    assert changed and snap.final and snap.status == "finished"


@pytest.mark.slow  # starts a process
def test_a_dead_writer_turns_the_run_killed(runs_dir):
    import subprocess
    import sys

    code = (
        "import os, sys; from advisor.store.writer import RunWriter; "
        "RunWriter(sys.argv[1], 'r5'); os._exit(0)"
    )  # a writer that dies without closing its run
    subprocess.run([sys.executable, "-c", code, str(runs_dir)], check=True, timeout=120)
    live = LiveRun(runs_dir / "r5")
    snap, _ = live.poll()
    assert snap.final and snap.status == "killed"
