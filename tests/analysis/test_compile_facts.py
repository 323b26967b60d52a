"""Compile facts and the compile category of the budget, from records written by the real run
writer: retraces by cause and function, a varying batch size told from a partial last batch, a
backward graph counted with its forward, the start-up and mid-fit parts of the budget; and the
stall facts that read them (what fills at an epoch start, outliers that were compiles)."""

from __future__ import annotations

import time

import pytest
from run_facts import derive as _derive

from advisor.store.schema import (
    BudgetRecord,
    CompileEvent,
    CompileRecord,
    PipelineRecord,
    WindowRecord,
)


def _event(function, cause, seconds=0.5, phase="train_steps", kind="compile", detail=""):
    return CompileEvent(
        t=time.time(),
        seconds=seconds,
        function=function,
        cause=cause,
        phase=phase,
        kind=kind,
        detail=detail,
    )


def _budget(compile_seconds=3.0, startup=1.0):
    return BudgetRecord(
        t=time.time(),
        final=True,
        wall_seconds=10.0,
        steps=100,
        seconds={
            "startup": 0.5,
            "compile": compile_seconds,
            "train_steps": 6.5,
            "unaccounted": 0.0,
        },
        source="track",
        compile_startup_seconds=startup,
    )


def test_retraces_by_cause_and_the_budgets_compile_parts(tmp_path):
    events = [
        _event("step", "first", 1.0, phase="startup"),
        _event("step", "python_value", detail="n: 1 → 2"),
        _event("step", "python_value", detail="n: 2 → 3"),
        _event("step", "python_value", detail="n: 3 → 4"),
        _event("eval", "first", 0.2),
        _event("eval", "partial_batch", 0.3, detail="x: (32, 4) → (8, 4)"),
    ]
    facts = _derive(
        tmp_path, _budget(), CompileRecord(t=time.time(), backend="tensorflow", events=events)
    )
    assert facts["compile.events"] == 6
    assert facts["compile.retraces"] == 4
    assert facts["compile.seconds"] == pytest.approx(3.0)
    assert facts["compile.startup_seconds"] == pytest.approx(1.0)
    assert facts["compile.value.retraces"] == 3
    assert facts["compile.value.function"] == "step"
    assert facts["compile.value.detail"] == "n: 3 → 4"
    assert facts["compile.value.share"] == pytest.approx(0.15)
    assert facts["compile.partial_batch.function"] == "eval"
    assert facts["compile.top_function"] == "step" and facts["compile.top_retraces"] == 3
    assert facts["compile.top_cause"] == "a new Python value"
    table = {row["category"]: row for row in facts["time.table"]}
    assert table["compile"]["seconds"] == pytest.approx(3.0)
    assert table["compile_startup"]["part_of"] == "compile"
    assert table["compile_midfit"]["seconds"] == pytest.approx(2.0)
    assert facts["goodput"] == pytest.approx(0.65)  # compiling is not training


def test_a_varying_batch_is_a_shape_cause_and_a_backward_graph_is_not_a_retrace(tmp_path):
    events = [
        _event("forward", "first", 2.0, phase="startup"),
        _event("forward", "first", 0.5, kind="backward", phase="startup"),
        _event("forward", "partial_batch", 1.0),  # the first smaller size …
        _event("forward", "partial_batch", 0.25, kind="backward"),
        _event("forward", "shape", 1.0),  # … then another: the batch size varies
        _event("forward", "shape", 0.25, kind="backward"),
    ]
    facts = _derive(tmp_path, _budget(5.0, 2.5), CompileRecord(t=time.time(), events=events))
    assert facts["compile.events"] == 3
    assert facts["compile.retraces"] == 2
    assert facts["compile.shape.retraces"] == 2
    assert facts["compile.shape.seconds"] == pytest.approx(2.5)  # backward seconds count
    assert facts["compile.partial_batch.retraces"] == 0


def test_stalls_name_what_fills_and_leave_compiled_outliers_to_the_compile_rules(tmp_path):
    now = time.time()
    windows = [
        WindowRecord(
            t=now + 10 * i,
            epoch=i,
            seconds=10.0,
            steps=100,
            step_begin=100 * i,
            step_end=100 * (i + 1),
            step_count=100,
            step_time_mean=0.08,
            step_time_std=0.05,
            step_time_max=1.0,
            step_outliers=5,
            step_outlier_seconds=2.0,
            epoch_start_seconds=1.2 if i else None,
            epoch_first_wait_seconds=1.1 if i else None,
        )
        for i in range(3)
    ]
    compiles = CompileRecord(t=now + 30, events=[_event("step", "shape", 0.3) for _ in range(5)])
    stages = [
        {"kind": "source", "op": "TensorSliceDataset"},
        {"kind": "map", "op": "MapDataset", "fn": "f"},
        {"kind": "shuffle", "op": "ShuffleDataset", "buffer_size": 16384},
        {"kind": "batch", "op": "BatchDataset", "batch_size": 256},
    ]
    pipeline = PipelineRecord(
        t=now, values={"input_kind": "tf.data", "summary": {"stages": stages}}
    )
    facts = _derive(tmp_path, pipeline, *windows, compiles)
    assert facts["time.epoch_first_waits"] == 2
    assert facts["time.epoch_first_wait_s.mean"] == pytest.approx(1.1)
    assert facts["time.epoch_start_fills"] == "a new iterator's shuffle buffer of 16,384 elements"
    assert facts["steps.compile_outlier_fraction"] == pytest.approx(1.5 / 30)
    assert facts["steps.unexplained_outlier_fraction"] == pytest.approx(0.2 - 1.5 / 30)
    assert facts["steps.outliers_explained_by"] == "compiles of step ×5"
