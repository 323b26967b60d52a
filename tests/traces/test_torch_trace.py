"""The torch.profiler chrome-trace summariser, on a real H200 trace and on hand-made timelines.

The GPU trace cannot be produced on a CPU-only CI machine: it was captured on an H200 by
``tests/backends/gpu_check.py`` and is checked in (see tests/data/README.md). The CPU path is
exercised end to end by ``test_matrix.py``.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from advisor.analysis.facts.trace import summary_facts
from advisor.errors import TraceError
from advisor.traces.intervals import merge, overlap, subtract
from advisor.traces.summarize import summarize
from advisor.traces.torch_trace import _self_times, summarize_events, summarize_torch

FIXTURE = (
    Path(__file__).parents[1] / "data" / "traces" / "torch_h200" / "torch-gpu.pt.trace.json.gz"
)


@pytest.fixture(scope="module")
def gpu_trace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("torch-gpu") / "plugins" / "profile" / "2026_11_29_23_40_00"
    folder.mkdir(parents=True)
    with gzip.open(FIXTURE, "rb") as src, (folder / "h200.pt.trace.json").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return folder


def test_gpu_trace_summary(gpu_trace):
    summary = summarize(gpu_trace.parents[2])  # a logdir: the torch trace is found and summarised
    assert summary.hardware == "GPU" and summary.on_device and summary.steps == 11
    facts = summary_facts(summary)
    assert 0 < facts["trace.device_compute_percent"] < 100
    assert facts["trace.device_idle_percent"] == pytest.approx(
        100
        - facts["trace.device_compute_percent"]
        - facts["trace.h2d_percent"]
        - facts["trace.d2h_percent"],
        abs=2.0,
    )
    assert facts["trace.input_percent"] + facts["trace.host_compute_percent"] + facts[
        "trace.all_others_percent"
    ] == pytest.approx(100, abs=0.1)
    assert facts["trace.kernel_launch_percent"] > 0 and facts["trace.communication_percent"] == 0
    # On a GPU the top ops are the kernels (an aten op on a CUDA tensor only launches them).
    ops = facts["trace.top_ops"]
    assert len(ops) == 10 and all(op["where"] == "device" for op in ops)
    assert any("gemm" in op["name"].lower() for op in ops)
    assert "trace.top_ops_host" not in facts
    assert summary.step_time_ms_mean and summary.step_time_ms_mean > 0


def test_cpu_timeline_shares_and_self_times():
    def op(name, ts, dur, cat="cpu_op", tid=1):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 7, "tid": tid}

    events = [
        op("ProfilerStep#1", 0, 60, "user_annotation"),
        op("aten::linear", 0, 40),
        op("aten::addmm", 5, 30),  # linear's self time: 10
        op(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 70, 20, "user_annotation"
        ),
        op("aten::stack", 72, 10),  # inside the input: counted as input, not compute
        op("ProfilerStep#2", 100, 50, "user_annotation"),
        op("aten::mm", 100, 25, tid=2),  # autograd's thread counts too
        op("ProfilerStep#3", 200, 10, "user_annotation"),
    ]
    fields = summarize_events(events)
    assert fields["steps"] == 3 and fields["hardware"] == "CPU_ONLY"
    # Cycles run start to start: [0, 100) and [100, 200); 200 µs in all.
    assert fields["step_time_ms_mean"] == pytest.approx(0.1)
    assert fields["input_percent"] == pytest.approx(10.0)  # 20 of 200
    assert fields["host_compute_percent"] == pytest.approx(32.5)  # (40 + 25) of 200
    assert fields["all_others_percent"] == pytest.approx(57.5)
    top = {o["name"]: o for o in fields["top_ops"]}
    assert top["aten::addmm"]["self_time_ms"] == pytest.approx(0.030)
    assert top["aten::linear"]["self_time_ms"] == pytest.approx(0.010)


def test_interval_helpers():
    assert merge([(5, 7), (0, 2), (1, 3)]) == [(0, 3), (5, 7)]
    assert subtract([(0, 10)], [(2, 3), (5, 6)]) == [(0, 2), (3, 5), (6, 10)]
    assert overlap([(0, 3), (5, 7)], [(2, 6)]) == 2
    ops = [
        {"ts": 0, "dur": 10, "pid": 1, "tid": 1},
        {"ts": 2, "dur": 3, "pid": 1, "tid": 1},
        {"ts": 6, "dur": 2, "pid": 1, "tid": 1},
    ]
    self_us = _self_times(ops)
    assert [self_us[id(e)] for e in ops] == [5, 3, 2] and self_us.outermost == {id(ops[0])}


def test_without_step_markers_there_is_no_breakdown(tmp_path):
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "pid": 1, "tid": 1}
        ]
    }
    (tmp_path / "x.pt.trace.json").write_text(json.dumps(trace))
    summary = summarize_torch(tmp_path)
    assert summary.steps == 0 and summary.input_percent is None and summary.top_ops
    assert any("ProfilerStep" in note for note in summary.notes)


@pytest.mark.parametrize(
    "content, message",
    [("", "empty"), ("{not json", "not a readable"), ('{"a": 1}', "no traceEvents")],
)
def test_bad_traces_are_one_line_errors(tmp_path, content, message):
    (tmp_path / "bad.pt.trace.json").write_text(content)
    with pytest.raises(TraceError, match=message) as info:
        summarize_torch(tmp_path)
    assert "\n" not in str(info.value) and "bad.pt.trace.json" in str(info.value)
