"""Timeline analysis on small hand-written timelines (table-driven; pure functions, no xprof).

The real-trace behaviour is covered by test_trace_mirrored.py and test_profiler_capture.py; these
cases pin the interval arithmetic and the placement rules on timelines whose answer is known.
"""

from __future__ import annotations

import pytest

from advisor.traces.events import analyse_events, intersect, measure, merge


def meta(pid: int, name: str, tid: int | None = None, thread: str | None = None) -> dict:
    if tid is None:
        return {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}}
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}


def step(n: int, ts: float, dur: float) -> dict:
    return {
        "ph": "X",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
        "name": f"train {n}",
        "args": {"step_num": str(n)},
    }


def host_op(name: str, kind: str, ts: float, dur: float, pid: int = 1) -> dict:
    return {
        "ph": "X",
        "pid": pid,
        "tid": 2,
        "ts": ts,
        "dur": dur,
        "name": kind,
        "args": {"long_name": f"{name}:{kind}", "is_eager": "0"},
    }


def device_op(name: str, ts: float, dur: float, tid: int = 7) -> dict:
    return {"ph": "X", "pid": 9, "tid": tid, "ts": ts, "dur": dur, "name": name, "args": {}}


@pytest.mark.parametrize(
    "intervals, merged",
    [
        ([], []),
        ([(0, 1), (2, 3)], [(0, 1), (2, 3)]),
        ([(2, 3), (0, 2.5)], [(0, 3)]),
        ([(0, 5), (1, 2), (4, 6)], [(0, 6)]),
        ([(1, 1), (3, 2)], []),  # empty and reversed intervals are dropped
    ],
)
def test_merge(intervals, merged):
    assert merge(intervals) == merged


def test_intersect_and_measure():
    a = merge([(0, 4), (6, 10)])
    b = merge([(2, 7), (9, 12)])
    assert intersect(a, b) == [(2, 4), (6, 7), (9, 10)]
    assert measure(intersect(a, b)) == 4


def test_allreduce_after_backward_is_bunched_at_the_end():
    events = [meta(1, "/host:CPU")]
    for n, t in ((1, 0.0), (2, 100.0)):
        events += [
            step(n, t, 100),
            host_op("model/dense/MatMul", "MatMul", t + 5, 30),  # forward
            host_op("gradient_tape/model/dense/MatMul", "MatMul", t + 35, 40),  # backward
            host_op("adam/CollectiveReduceV2", "CollectiveReduceV2", t + 75, 15),  # all-reduce
            host_op("adam/update/Mul", "Mul", t + 90, 8),  # optimizer update
        ]
    out = analyse_events({"traceEvents": events})
    assert out["steps"] == 2 and out["collective_ops"] == ["CollectiveReduceV2"]
    assert out["communication_percent"] == pytest.approx(15.0)
    assert out["communication_overlap"] == 0.0
    assert out["communication_at_end"] is True
    assert "h2d_percent" not in out  # no device in this timeline


def test_bucketed_allreduce_during_backward_is_spread_and_overlapped():
    events = [meta(1, "/host:CPU"), step(1, 0, 100)]
    events += [
        host_op("gradient_tape/layer3/MatMul", "MatMul", 10, 20),
        host_op("replica/CollectiveReduceV2", "CollectiveReduceV2", 30, 10),  # bucket 1 done at 40
        host_op("gradient_tape/layer2/MatMul", "MatMul", 32, 30),  # backward goes on, overlapped
        host_op("gradient_tape/layer1/MatMul", "MatMul", 62, 20),
        host_op("replica/CollectiveReduceV2_1", "CollectiveReduceV2", 82, 10),
    ]
    out = analyse_events({"traceEvents": events})
    assert out["communication_at_end"] is False
    assert out["communication_overlap"] == pytest.approx(
        0.4
    )  # 8 of 20 µs overlap the backward pass


def test_device_streams_copies_and_nccl():
    events = [
        meta(1, "/host:CPU"),
        meta(9, "/device:GPU:0"),
        meta(9, "", 7, "Stream #7(Compute)"),
        meta(9, "", 8, "XLA Ops"),
        step(1, 0, 200),
    ]
    events += [
        device_op("MemcpyH2D", 0, 20),
        device_op("fusion.1", 20, 100),
        device_op("fusion.1", 20, 100, tid=8),  # a derived line: must not count twice
        device_op("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 120, 40),
        device_op("MemcpyD2H", 170, 10),
    ]
    out = analyse_events({"traceEvents": events})
    assert out["devices"] == ["/device:GPU:0"]
    assert out["h2d_percent"] == pytest.approx(10.0)
    assert out["d2h_percent"] == pytest.approx(5.0)
    assert out["communication_percent"] == pytest.approx(20.0)
    assert out["communication_overlap"] == 0.0


def test_eager_time_is_counted_outside_compiled_functions():
    events = [
        meta(1, "/host:CPU"),
        step(1, 0, 100),
        {
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "ts": 5,
            "dur": 60,
            "name": "EagerLocalExecute: __inference_step_7",
        },
        {"ph": "X", "pid": 1, "tid": 1, "ts": 70, "dur": 10, "name": "EagerLocalExecute: MatMul"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 75, "dur": 10, "name": "EagerLocalExecute: AddV2"},
    ]
    out = analyse_events({"traceEvents": events})
    assert out["tf_events"] is True and out["eager_percent"] == pytest.approx(15.0)


def test_no_steps_and_empty_timelines():
    assert analyse_events({}) == {
        "steps": 0,
        "tf_events": False,
        "devices": [],
        "collective_ops": [],
    }
    out = analyse_events(
        {
            "traceEvents": [
                meta(1, "/host:CPU"),
                host_op("a/CollectiveReduceV2", "CollectiveReduceV2", 0, 5),
                host_op("b/MatMul", "MatMul", 5, 15),
            ]
        }
    )
    assert out["steps"] == 0 and out["communication_percent"] == pytest.approx(25.0)
    assert "communication_at_end" not in out  # placement needs steps
