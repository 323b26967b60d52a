"""A history's points, grouping by tag, change points per figure and the history gate."""

from __future__ import annotations

import pytest

from advisor.analysis.history import RunFigures, build_history, history_gate

HOOK = "part.callback.Logger.on_train_batch_end"


def run(i: int, rate: float, hook_ms: float = 0.01, commit: str | None = None) -> RunFigures:
    wobble = (1.0, 0.97, 1.03, 0.99, 1.02)[i % 5]
    return RunFigures(
        run_id=f"r{i:02d}",
        created=f"2026-12-06T00:{i:02d}:00",
        tags={"commit": commit} if commit else {},
        samples_per_s=rate * wobble,
        goodput=0.6 * wobble,
        parts={HOOK: hook_ms * wobble, "part.train_steps": 2.0 * wobble},
        step_ms=2.0 + hook_ms,
    )


def test_a_part_that_steps_up_is_found_at_its_run_even_when_samples_per_s_is_noisy():
    noisy = (1.0, 0.7, 1.25, 0.85, 1.1, 0.75)  # run-to-run contention
    runs = [run(i, 30000 * noisy[i % 6], hook_ms=0.01 if i < 10 else 0.5) for i in range(30)]
    h = build_history(runs, "name=gate")
    hook_changes = [c for c in h.changes if c.metric == HOOK]
    assert [c.index for c in hook_changes] == [10]
    assert hook_changes[0].step_share_pct == pytest.approx(24, abs=2)
    gate = history_gate(h, 5.0)
    assert gate.failed and gate.latest is not None and gate.latest.metric == HOOK


def test_two_steps_in_samples_per_s_are_both_found():
    runs = [run(i, 30000 if i < 10 else 24000 if i < 20 else 18000) for i in range(30)]
    h = build_history(runs, "name=gate")
    assert [
        (c.index, c.before_label, c.label) for c in h.changes if c.metric == "samples_per_s"
    ] == [
        (10, "r09", "r10"),
        (20, "r19", "r20"),
    ]
    assert history_gate(h, 5.0).failed


def test_grouping_by_a_tag_makes_one_point_per_value_at_the_median():
    runs = [run(i, 100.0 + i, commit=f"c{i // 3}") for i in range(9)] + [run(9, 1.0)]
    h = build_history(runs, "name=gate", group_by="commit")
    assert [p.label for p in h.points] == ["c0", "c1", "c2"]
    assert h.points[0].run_ids == ["r00", "r01", "r02"]
    assert h.points[1].samples_per_s == pytest.approx(105.0)  # 101.97, 106.08, 105.0


def test_a_short_history_is_not_judgeable_and_a_flat_one_passes():
    assert history_gate(build_history([run(i, 100.0) for i in range(4)], "x"), 5.0).verdict == (
        "too short"
    )
    flat = history_gate(build_history([run(i, 100.0) for i in range(12)], "x"), 5.0)
    assert flat.verdict == "no regression" and flat.latest is None


def test_an_improvement_as_the_latest_change_passes():
    runs = [run(i, 100.0 if i < 10 else 140.0) for i in range(20)]
    gate = history_gate(build_history(runs, "x"), 5.0)
    assert gate.latest is not None and gate.latest.change_pct > 0 and not gate.failed
