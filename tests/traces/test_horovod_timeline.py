"""Horovod's timeline → the communication share, and the compression the optimizer really used.

``tests/data/horovod`` holds a real 2-worker run and its timeline, written by
``scripts/horovod_ci.sh`` (Horovod 0.28.1 over Gloo, fp16 compression, TensorFlow 2.13.1 CPU).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.collectors.context import horovod_compression
from advisor.errors import TraceError
from advisor.service import RunService
from advisor.traces.attach import attach_timeline
from advisor.traces.horovod_timeline import is_horovod_timeline, load_events, summarize_timeline

DATA = Path(__file__).parents[1] / "data" / "horovod"
START = 1_700_000_000_000_000  # µs since the epoch


def _timeline(path: Path, events: list[dict], close: bool = True) -> Path:
    meta = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": 0,
            "args": {"start_time_since_epoch_in_micros": START},
        }
    ]
    text = (
        "[\n"
        + ",\n".join(json.dumps(e) for e in meta + events)
        + ("]" if close else ',\n{"ph": "B", "na')
    )
    path.write_text(text, encoding="utf-8")
    return path


def _op(pid: int, name: str, begin: int, end: int, dtype: str | None = None) -> list[dict]:
    end_event = {"ph": "E", "ts": end, "pid": pid}
    if dtype:
        end_event["args"] = {"dtype": dtype, "shape": "[8]"}
    return [{"ph": "B", "name": name, "ts": begin, "pid": pid}, end_event]


def _steps() -> list[dict]:
    """Three steps 100 ms apart; two tensors; all-reduce busy 10 ms a step (the tensors overlap)."""
    events: list[dict] = []
    for k in range(3):
        t = 1_000_000 + k * 100_000
        events += _op(1, "NEGOTIATE_ALLREDUCE", t, t + 5_000)
        events += _op(2, "NEGOTIATE_ALLREDUCE", t + 1_000, t + 5_000)
        events += _op(1, "ALLREDUCE", t + 5_000, t + 12_000, "float16")
        events += _op(2, "ALLREDUCE", t + 8_000, t + 15_000, "float16")
    return events


def test_shares_of_a_timeline_by_hand(tmp_path):
    path = _timeline(tmp_path / "timeline.json", _steps())
    assert is_horovod_timeline(path)
    s = summarize_timeline(path)
    # Span: first all-reduce start (1.005 s) to last end (1.215 s) = 210 ms; busy 3 × 10 ms.
    assert s.communication_percent == pytest.approx(100 * 30 / 210)
    assert s.steps == 3 and s.step_time_ms_mean == pytest.approx(100.0)
    extra = s.model_extra
    assert extra["horovod_wire_dtypes"] == {"float16": 6} and extra["horovod_tensors"] == 2
    # Negotiation 5 ms a step, of which all falls before the span starts in step 1.
    assert extra["horovod_negotiate_percent"] == pytest.approx(100 * 10 / 210)
    assert (
        s.collective_ops == ["ALLREDUCE"] and s.xprof_properties["profiler"] == "horovod-timeline"
    )


def test_training_windows_are_the_basis_when_the_run_is_known(tmp_path):
    path = _timeline(tmp_path / "timeline.json", _steps())
    t0 = START / 1e6
    # One window over steps 2 and 3 only (step 1 was warm-up): 1.1 s to 1.3 s.
    s = summarize_timeline(path, [(t0 + 1.1, t0 + 1.3)])
    assert s.communication_percent == pytest.approx(100 * 20 / 200)
    assert s.steps == 2 and "training windows" in s.xprof_properties["basis"]


def test_a_timeline_cut_short_still_reads_and_bad_files_say_why(tmp_path):
    path = _timeline(tmp_path / "open.json", _steps(), close=False)  # the job was killed mid-write
    assert len(load_events(path)) == 1 + len(_steps())
    assert summarize_timeline(path).steps == 3
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(TraceError, match="empty"):
        load_events(empty)
    idle = _timeline(tmp_path / "idle.json", _op(1, "NEGOTIATE_ALLREDUCE", 10, 20))
    with pytest.raises(TraceError, match="no collective op"):
        summarize_timeline(idle)
    other = tmp_path / "trace.json"
    other.write_text('{"traceEvents": []}', encoding="utf-8")
    assert not is_horovod_timeline(other)


@pytest.fixture
def horovod_run(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(DATA / "run-n2", runs / "horovod-ci-horovod-n2-r0")
    timeline = tmp_path / "timeline.json"
    timeline.write_bytes(gzip.decompress((DATA / "timeline-n2.json.gz").read_bytes()))
    return runs, runs / "horovod-ci-horovod-n2-r0", timeline


def test_a_real_horovod_run_gets_its_communication_from_the_timeline_and_d606_judges_fp16(
    horovod_run,
):
    runs, run, timeline = horovod_run
    before = RunService(runs).analyse(run.name).facts
    assert "trace.communication_percent" not in before
    assert (
        before["context.horovod_compression"] == "fp16"
    )  # read from the optimizer by the callback
    record, summary = attach_timeline(timeline, run)
    assert (
        record.path.startswith("traces/horovod/")
        and (run / record.path / "timeline.json").is_file()
    )
    assert "training windows" in summary.xprof_properties["basis"]
    facts = RunService(runs).analyse(run.name).facts
    assert facts["trace.communication_percent"] == pytest.approx(
        summary.communication_percent, abs=1e-3
    )
    assert (
        15 < facts["trace.communication_percent"] < 100
    )  # 2 CPU workers: communication is expensive
    (d606,) = RunService(runs).diagnose(run.name, select=["D606"]).findings
    assert d606.status == "pass"  # compressed: nothing to advise


def test_d606_fails_on_the_same_timeline_when_the_optimizer_did_not_compress(horovod_run):
    runs, run, timeline = horovod_run
    for worker in run.glob("worker-*.jsonl"):
        worker.write_text(
            worker.read_text().replace(
                '"context.horovod_compression":"fp16"', '"context.horovod_compression":"none"'
            )
        )
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs), "trace", str(timeline), "--into", run.name]
    )
    assert result.exit_code == 0, result.output
    assert "Horovod timeline" in result.output and "sent as float16" in result.output
    (d606,) = RunService(runs).diagnose(run.name, select=["D606"]).findings
    assert d606.status == "fail" and "uncompressed" in d606.message


def test_compression_is_read_from_horovods_optimizer_wrappers():
    """Horovod cannot be built in the test environment (scripts/horovod_ci.sh builds it and checks
    this on the real optimizer); here classes shaped like its wrappers stand in at that boundary."""

    def compressor(name: str) -> type:
        return type(name, (), {"__module__": "horovod.tensorflow.compression"})

    fp16 = compressor("FP16Compressor")

    def keras_wrapper(compression: type) -> object:  # horovod/_keras: the compressor in a closure
        class _DistributedOptimizer:
            def __init__(self) -> None:
                self._allreduce_grads = lambda grads: (compression, grads)

        return _DistributedOptimizer()

    class TorchWrapper:  # horovod.torch: an attribute
        _compression = compressor("NoneCompressor")

    assert horovod_compression(keras_wrapper(fp16)) == "fp16"
    assert horovod_compression(TorchWrapper()) == "none"
    assert horovod_compression(type("Adam", (), {})()) is None
    assert horovod_compression(None) is None
    unrelated = type("Opt", (), {"_compression": "gzip"})()  # not Horovod's
    assert horovod_compression(unrelated) is None
