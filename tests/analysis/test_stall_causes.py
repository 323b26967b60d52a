"""Step outliers matched with what ran during them, from records written by the real run writer:
full garbage collections and saves named with their counts, the periodic stall M172 names, and
M150's price left to the rest; the collector's own parts (the outlier times a window records, the
gc.callbacks hook) on real collections; outliers during validation and across epoch ends, named
the same way."""

from __future__ import annotations

import gc
import time

import pytest
from run_facts import derive as _derive

from advisor.collectors.gc_pauses import GcPauses
from advisor.collectors.windows import interval_stats
from advisor.diagnosis import evaluate, load_rules
from advisor.store.schema import (
    BudgetRecord,
    CheckpointTime,
    EpochRecord,
    GcTime,
    WindowRecord,
)

RULES = {r.code: r for r in load_rules()}


def test_outliers_are_matched_with_collections_and_saves_and_the_rest_is_m150s(tmp_path):
    t0 = time.time() - 100.0
    # Five outliers of 0.5 s (0.45 s beyond the mean step): three during full collections of
    # 0.4 s, one during a save, one during nothing recorded.
    spans = [[t0 + 10.0 * i, 0.5, 0.45] for i in range(5)]
    pauses = [[t0 + 10.0 * i + 0.05, 0.4] for i in range(3)]
    saves = [[t0 + 30.0 + 0.1, 0.3], [t0 + 70.0, 0.3]]  # the second during no outlier
    window = WindowRecord(
        t=t0 + 60.0,
        epoch=1,
        seconds=60.0,
        steps=1000,
        step_begin=100,
        step_end=1100,
        step_count=1000,
        step_time_mean=0.05,
        step_time_std=0.05,
        step_time_max=0.5,
        step_outliers=5,
        step_outlier_seconds=2.25,
        step_outlier_spans=spans,
    )
    budget = BudgetRecord(
        t=t0 + 80.0,
        final=True,
        wall_seconds=62.0,
        seconds={"train_steps": 60.0, "checkpoint": 0.6, "unaccounted": 1.4},
        checkpoint=CheckpointTime(
            count=2, seconds=0.6, by={"ModelCheckpoint.on_train_batch_end": 2}, times=saves
        ),
        gc=GcTime(count=3, seconds=1.2, pauses=pauses),
    )
    facts = _derive(tmp_path, window, budget)
    assert facts["steps.outliers_timed"] == 5
    assert facts["stalls.periodic_kind"] == "gc"
    assert facts["stalls.periodic_outliers"] == 3
    assert facts["stalls.periodic_fraction"] == pytest.approx(3 * 0.45 / 60.0)
    assert "gc.freeze()" in facts["stalls.periodic_fix"]
    said = facts["steps.outliers_explained_by"]
    assert said.startswith(
        "3 of 5 outliers coincide with a full (gen-2) garbage collection of 0.40"
    )
    assert "1 of 5 outliers coincide with a save by ModelCheckpoint.on_train_batch_end" in said
    # M150 prices the one outlier nothing explains.
    assert facts["steps.unexplained_outlier_fraction"] == pytest.approx(0.45 / 60.0)
    assert facts["stalls.gc_pauses"] == 3
    assert facts["stalls.gc_pause_s.mean"] == pytest.approx(0.4)


def test_a_writer_that_timed_collections_and_matched_none_says_so(tmp_path):
    t0 = time.time() - 100.0
    window = WindowRecord(
        t=t0 + 60.0,
        epoch=1,
        seconds=60.0,
        steps=1000,
        step_begin=0,
        step_end=1000,
        step_count=1000,
        step_time_mean=0.06,
        step_time_std=0.01,
        step_time_max=0.5,
        step_outliers=1,
        step_outlier_seconds=0.45,
        step_outlier_spans=[[t0 + 5.0, 0.5, 0.45]],
    )
    budget = BudgetRecord(
        t=t0 + 80.0,
        final=True,
        wall_seconds=60.0,
        seconds={"train_steps": 60.0},
        gc=GcTime(count=1, seconds=0.3, pauses=[[t0 + 20.0, 0.3]]),
    )
    facts = _derive(tmp_path, window, budget)
    assert facts["stalls.periodic_outliers"] == 0
    assert facts["stalls.periodic_fraction"] == 0.0
    assert "steps.outliers_explained_by" not in facts


def _window(t0, spans, std=0.05):
    excess = sum(s[2] for s in spans)
    return WindowRecord(
        t=t0 + 80.0,
        epoch=3,
        seconds=80.0,
        steps=1600,
        step_begin=0,
        step_end=1600,
        step_count=1600,
        step_time_mean=0.05,
        step_time_std=std,
        step_time_max=max(s[1] for s in spans),
        step_outliers=len(spans),
        step_outlier_seconds=excess,
        step_outlier_spans=spans,
    )


def _epochs(t0, val_seconds):
    return [
        EpochRecord(
            t=t0 + 20.0 * (i + 1),
            epoch=i,
            seconds=20.0,
            train_seconds=20.0 - val_seconds,
            val_seconds=val_seconds,
            steps=400,
        )
        for i in range(4)
    ]


def test_outliers_during_validation_are_named_with_its_fix(tmp_path):
    t0 = time.time() - 200.0
    # Four epochs of 20 s, each ending with 0.6 s of validation; an outlier of 1.2 s overlaps the
    # validation of each (1.15 s beyond the mean step), and a fifth lies in the middle of an epoch.
    spans = [[t0 + 20.0 * (i + 1) - 0.7, 1.2, 1.15] for i in range(4)]
    spans.append([t0 + 10.0, 0.3, 0.25])
    budget = BudgetRecord(
        t=t0 + 90.0,
        final=True,
        wall_seconds=81.0,
        seconds={"train_steps": 77.6, "validation": 2.4, "unaccounted": 1.0},
        gc=GcTime(count=0, seconds=0.0, pauses=[]),
    )
    facts = _derive(tmp_path, *_epochs(t0, 0.6), _window(t0, spans), budget)
    assert facts["stalls.periodic_kind"] == "validation"
    assert facts["stalls.periodic_outliers"] == 4
    assert facts["stalls.periodic_fraction"] == pytest.approx(4 * 1.15 / 80.0)
    assert facts["stalls.periodic_cause"] == "coincide with validation of 0.60 s"
    assert "validation_freq" in facts["stalls.periodic_fix"]
    assert facts["steps.unexplained_outlier_fraction"] == pytest.approx(0.25 / 80.0)
    m172 = evaluate(RULES["M172"], facts)
    assert m172.status == "fail" and "4 of 5 step outliers coincide with validation" in m172.message


def test_outliers_across_an_epochs_end_are_named_as_following_it(tmp_path):
    t0 = time.time() - 200.0
    # No validation: each epoch's end falls inside a slow step (a custom loop's new iterator).
    spans = [[t0 + 20.0 * (i + 1) - 0.1, 1.3, 1.25] for i in range(4)]
    facts = _derive(tmp_path, *_epochs(t0, 0.0), _window(t0, spans))
    assert facts["stalls.periodic_kind"] == "epoch_end"
    assert facts["stalls.periodic_outliers"] == 4
    assert facts["stalls.periodic_cause"] == "follow an epoch's end"
    assert "persistent_workers=True" in facts["stalls.periodic_fix"]
    assert facts["steps.unexplained_outlier_fraction"] == pytest.approx(0.0)
    m172 = evaluate(RULES["M172"], facts)
    assert m172.status == "fail" and "step outliers follow an epoch's end" in m172.message


def test_a_window_records_when_its_outliers_began():
    stamps = [float(i) * 0.01 for i in range(30)]
    stamps[20:] = [s + 0.5 for s in stamps[20:]]  # the 20th step took 0.51 s
    stats = interval_stats(stamps, 1, wall_offset=1000.0)
    assert stats["step_outliers"] == 1
    ((begin, seconds, beyond),) = stats["step_outlier_spans"]
    assert begin == pytest.approx(1000.0 + stamps[19], abs=1e-3)
    assert seconds == pytest.approx(0.51, abs=1e-3)
    assert beyond == pytest.approx(stats["step_outlier_seconds"], abs=1e-3)
    assert "step_outlier_spans" not in interval_stats(stamps, 1)  # no clock given: no times


def test_full_collections_are_timed_and_younger_ones_are_not():
    pauses = GcPauses()
    pauses.start()
    try:
        gc.collect(0)
        gc.collect(1)
        assert pauses.count == 0
        before = time.time()
        gc.collect()
        assert pauses.count == 1
        ((began, seconds),) = pauses.pauses
        assert before - 0.01 <= began <= time.time() and seconds >= 0
        assert pauses.spans and pauses.seconds == pytest.approx(seconds, abs=1e-3)
    finally:
        pauses.stop()
    assert pauses._hook not in gc.callbacks
    gc.collect()
    assert pauses.count == 1
