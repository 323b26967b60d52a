"""Budget facts from budget records written by the real run writer: shares, goodput, the
callbacks' costs per step, checkpoints, a budget cut short by a kill, and the fact family."""

from __future__ import annotations

import time

import pytest

from advisor.analysis.registry import registry
from advisor.store.reader import RunReader
from advisor.store.schema import BudgetRecord, CallbackTime, CheckpointTime, Manifest, WindowRecord
from advisor.store.writer import RunWriter


def _run(tmp_path, budget: BudgetRecord, after: float = 0.0):
    writer = RunWriter(tmp_path, manifest=Manifest(run_id="x", created=time.time()))
    writer.write(budget)
    if after:  # a record written after the budget (the job went on, then was killed)
        writer.write(
            WindowRecord(
                t=budget.t + after, epoch=1, seconds=after, steps=10, step_begin=100, step_end=110
            )
        )
    writer.close("finished") if budget.final else writer.sync()
    return RunReader(writer.path).read()


def _budget(final: bool = True, t: float | None = None) -> BudgetRecord:
    return BudgetRecord(
        t=t or time.time(),
        final=final,
        wall_seconds=20.0,
        steps=1000,
        seconds={
            "startup": 1.0,
            "train_steps": 10.0,
            "validation": 2.0,
            "epoch_boundary": 0.5,
            "callbacks": 4.0,
            "checkpoint": 2.0,
            "advisor_hooks": 0.2,
            "advisor_measure": 0.3,
            "profile": 0.0,
            "unaccounted": 0.0,
        },
        callbacks=[
            CallbackTime(name="Logger", hook="on_train_batch_end", seconds=3.5, calls=1000),
            CallbackTime(name="Logger", hook="on_epoch_end", seconds=0.5, calls=5),
            CallbackTime(
                name="ModelCheckpoint", hook="on_epoch_end", seconds=2.0, calls=5, kind="checkpoint"
            ),
        ],
        checkpoint=CheckpointTime(
            count=5, seconds=2.0, bytes=5_000_000, by={"ModelCheckpoint.on_epoch_end": 5}
        ),
    )


def test_shares_goodput_and_costs_per_step(tmp_path):
    facts, errors = registry().derive(_run(tmp_path, _budget()))
    assert errors == []
    assert facts["goodput"] == pytest.approx(0.5)
    assert facts["goodput.without_advisor"] == pytest.approx(10.0 / 19.5)
    assert facts["time.callbacks.share"] == pytest.approx(0.2)
    assert facts["time.largest_loss"].startswith("callbacks")
    assert facts["callbacks.slowest"] == "Logger.on_train_batch_end"
    assert facts["callbacks.slowest_ms_per_step"] == pytest.approx(3.5)
    # the loop: the steps and the other callbacks' hooks (Logger's two; the checkpoint apart)
    assert facts["callbacks.slowest_step_share"] == pytest.approx(3.5 / (10.0 + 3.5 + 0.5))
    assert facts["callbacks.Logger.ms_per_step"] == pytest.approx(4.0)  # both of its hooks
    assert facts["checkpoint.count"] == 5 and facts["checkpoint.share"] == pytest.approx(0.1)
    assert facts["checkpoint.mb_per_s"] == pytest.approx(2.5)
    assert facts["time.final"] is True and facts["time.unaccounted.seconds"] == 0
    assert "input_wait" not in {
        row["category"] for row in facts["time.table"]
    }  # no baseline: not claimed


def test_a_budget_cut_short_leaves_the_rest_unaccounted(tmp_path):
    facts, errors = registry().derive(_run(tmp_path, _budget(final=False), after=5.0))
    assert errors == []
    assert facts["time.final"] is False
    assert facts["time.unaccounted.seconds"] == pytest.approx(5.0, abs=1e-3)
    assert facts["time.wall_seconds"] == pytest.approx(25.0, abs=1e-3)


def test_the_callback_fact_family_is_registered_but_cannot_be_named_by_a_rule():
    reg = registry()
    assert reg.get("callbacks.Logger_2.ms_per_step") is reg["callbacks.<name>.ms_per_step"]
    assert reg.get("callbacks.Logger.ms_per_second") is None
    assert "callbacks.Logger.ms_per_step" not in reg  # rules name registered facts only
