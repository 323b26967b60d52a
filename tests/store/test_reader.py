"""RunWriter/RunReader: the run-directory contract, damage tolerance and strict errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from advisor.errors import RunFormatError, RunNotFoundError, SchemaVersionError, UsageError
from advisor.store.reader import RunReader, list_run_dirs
from advisor.store.run_refs import resolve_run
from advisor.store.schema import SCHEMA_VERSION, EpochRecord, EventRecord, WindowRecord
from advisor.store.writer import RunWriter, new_run_id


def _window(t: float, steps: int = 10) -> WindowRecord:
    return WindowRecord(
        t=t, epoch=0, seconds=1.0, steps=steps, samples=steps * 32, step_begin=0, step_end=steps
    )


def make_run(runs_dir, close: bool = True) -> RunWriter:
    writer = RunWriter(runs_dir, manifest={"global_batch_size": 32}, name="unit")
    writer.write(_window(time.time()))
    writer.write(
        EpochRecord(t=time.time(), epoch=0, seconds=1.0, train_seconds=1.0, steps=10, samples=320)
    )
    if close:
        writer.close()
    return writer


def test_round_trip_and_finished_status(runs_dir):
    writer = make_run(runs_dir)
    run = RunReader(writer.path).read()
    assert run.status == "finished"
    assert run.manifest.global_batch_size == 32
    assert [type(r).__name__ for r in run.records[0]] == [
        "StartRecord",
        "WindowRecord",
        "EpochRecord",
        "EndRecord",
    ]
    assert run.of_type(WindowRecord)[0].samples == 320
    assert run.warnings == []


def test_run_ids_are_unique_and_safe():
    ids = {new_run_id("my run/with:odd*chars") for _ in range(200)}
    assert len(ids) == 200
    for run_id in ids:
        assert "/" not in run_id and ":" not in run_id and "*" not in run_id


def test_unsafe_run_id_is_rejected(runs_dir):
    with pytest.raises(UsageError):
        RunWriter(runs_dir, run_id="../escape")


def test_manifest_is_replaced_atomically(runs_dir):
    writer = make_run(runs_dir, close=False)
    writer.update_manifest(strategy="MirroredStrategy", tags={"a": "1"})
    leftovers = [p.name for p in writer.path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    data = json.loads((writer.path / "run.json").read_text())
    assert data["strategy"] == "MirroredStrategy" and data["tags"] == {"a": "1"}
    writer.close()


def test_truncated_last_line_is_tolerated(runs_dir):
    writer = make_run(runs_dir)
    worker = writer.path / "worker-0.jsonl"
    with open(worker, "a") as fh:
        fh.write('{"type": "window", "t": 1.0, "epo')  # the job died mid-write
    run = RunReader(writer.path).read()
    assert len(run.of_type(WindowRecord)) == 1
    assert run.warnings == ["worker-0.jsonl:5: truncated last line ignored"]


def test_garbage_line_in_the_middle_is_skipped_and_reported_naming_the_file(runs_dir):
    writer = make_run(runs_dir)
    worker = writer.path / "worker-0.jsonl"
    lines = worker.read_text().splitlines()
    lines.insert(1, "this is not json")
    worker.write_text("\n".join(lines) + "\n")
    run = RunReader(writer.path).read()
    assert len(run.problems) == 1
    assert run.problems[0].startswith("worker-0.jsonl:2: not a JSON record")
    assert len(run.of_type(WindowRecord)) == 1 and run.status == "finished"  # the rest is read
    assert run.problems[0] in run.incomplete  # a run that lost data is not judged as complete


def test_invalid_known_record_is_skipped_and_reported(runs_dir):
    writer = make_run(runs_dir)
    with open(writer.path / "worker-0.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "window", "t": 1.0, "epoch": "zero"}) + "\n")
    run = RunReader(writer.path).read()
    assert len(run.problems) == 1 and "invalid 'window' record" in run.problems[0]
    assert len(run.of_type(WindowRecord)) == 1


def test_unknown_record_types_are_skipped_and_counted(runs_dir):
    writer = make_run(runs_dir)
    with open(writer.path / "worker-0.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "from-the-future", "t": 1.0, "x": 1}) + "\n")
    run = RunReader(writer.path).read()
    assert run.unknown_records == 1
    assert len(run.of_type(WindowRecord)) == 1


def test_newer_schema_version_is_refused(runs_dir):
    writer = make_run(runs_dir)
    manifest = writer.path / "run.json"
    data = json.loads(manifest.read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    manifest.write_text(json.dumps(data))
    with pytest.raises(SchemaVersionError, match="upgrade advisor"):
        RunReader(writer.path).read()


def test_missing_manifest(runs_dir):
    writer = make_run(runs_dir)
    (writer.path / "run.json").unlink()
    with pytest.raises(RunFormatError, match="missing manifest"):
        RunReader(writer.path).read()
    with pytest.raises(RunNotFoundError):
        RunReader(runs_dir / "nope").read()


def test_corrupt_manifest(runs_dir):
    writer = make_run(runs_dir)
    (writer.path / "run.json").write_text("{not json")
    with pytest.raises(RunFormatError, match="run.json: unreadable manifest"):
        RunReader(writer.path).read()


@pytest.mark.slow
def test_running_run_of_a_dead_process_is_killed(runs_dir):
    code = (
        "import sys; from advisor.store.writer import RunWriter;"
        f"w = RunWriter({str(runs_dir)!r}, run_id='orphan'); print(w.path)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    run = RunReader(runs_dir / "orphan").read()
    assert run.manifest.status == "running"
    assert run.status == "killed"


def test_live_run_is_running(runs_dir):
    writer = make_run(runs_dir, close=False)
    assert RunReader(writer.path).read().status == "running"
    writer.close(status="failed")
    assert RunReader(writer.path).read().status == "failed"


def test_resolve_by_id_prefix_path_and_latest(runs_dir):
    first = make_run(runs_dir)
    time.sleep(0.01)
    second = make_run(runs_dir)
    assert resolve_run(None, runs_dir) == second.path
    assert resolve_run("latest", runs_dir) == second.path
    assert resolve_run(first.run_id, runs_dir) == first.path
    assert resolve_run(str(first.path)) == first.path
    assert len(list_run_dirs(runs_dir)) == 2
    with pytest.raises(RunNotFoundError, match="matches 2 runs"):
        resolve_run("unit", runs_dir)
    with pytest.raises(RunNotFoundError, match="no run"):
        resolve_run("zzz", runs_dir)


def test_runs_dir_from_environment(runs_dir):
    writer = RunWriter(manifest={})
    assert writer.path.parent == runs_dir
    writer.close()


def test_events_round_trip(runs_dir):
    writer = make_run(runs_dir, close=False)
    writer.write(EventRecord(t=time.time(), level="error", source="x", message="boom"))
    writer.close()
    events = RunReader(writer.path).read().of_type(EventRecord)
    assert [(e.source, e.message) for e in events] == [("x", "boom")]
    assert os.path.exists(writer.path / "traces")
