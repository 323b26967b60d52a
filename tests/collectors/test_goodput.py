"""The time budget (goodput): every second of a real fit charged once, other callbacks' hooks and
the model's saves timed without changing what they do, and the originals put back after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from advisor.collectors.ledger import ADVISOR, BOUNDARY, STARTUP, TRAIN, Ledger


def test_the_ledger_charges_each_second_to_one_state():
    ledger = Ledger(time.perf_counter(), ADVISOR)
    ledger.phase(STARTUP)
    ledger.enter("cb:A.on_train_begin")
    ledger.enter("checkpoint")  # a save inside a hook: carved out of the hook
    ledger.leave()
    ledger.phase(TRAIN)  # inside an entered state the phase beneath it changes
    ledger.leave()
    assert ledger.state == TRAIN and ledger.stack == []
    ledger.phase(BOUNDARY)
    now = time.perf_counter()
    spent = ledger.snapshot(now)
    assert sum(spent.values()) == pytest.approx(ledger.wall(now), rel=1e-9)
    assert ledger.calls == {"cb:A.on_train_begin": 1, "checkpoint": 1}


def _fit(tmp_path: Path, callbacks: list, epochs: int = 2, **options):
    import keras

    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    cb = _callback(tmp_path, **options)
    model.fit(
        x,
        y,
        batch_size=16,
        epochs=epochs,
        validation_split=0.25,
        verbose=0,
        callbacks=[cb, *callbacks],
    )
    return model, cb


def _callback(tmp_path: Path, **options):
    import advisor

    return advisor.AdvisorCallback(
        tmp_path / "runs",
        baseline=None,
        telemetry=False,
        log_every_seconds=None,
        window_seconds=0.2,
        **options,
    )


def _budget(cb):
    from advisor.store.reader import RunReader
    from advisor.store.schema import BudgetRecord

    run = RunReader(cb.run_path).read()
    return run, [b for b in run.of_type(BudgetRecord)]


@pytest.mark.slow
def test_a_real_fit_is_accounted_for_and_its_callbacks_are_left_as_they_were(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    order: list[str] = []

    class Busy(keras.callbacks.Callback):
        calls = 0

        def on_train_batch_end(self, batch, logs=None):
            Busy.calls += 1
            time.sleep(0.003)

    class Recorder(keras.callbacks.Callback):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def on_epoch_end(self, epoch, logs=None):
            order.append(self.name)
            assert "on_epoch_end" in vars(self)  # wrapped while the fit runs
            return "ignored"

    checkpoint = keras.callbacks.ModelCheckpoint(str(tmp_path / "model.keras"))
    busy, first, second = Busy(), Recorder("first"), Recorder("second")
    model, cb = _fit(tmp_path, [busy, first, checkpoint, second])

    assert order == ["first", "second"] * 2  # the hooks ran, in their order
    for obj in (busy, first, second, checkpoint, model):  # and the originals are back
        assert not {"on_train_batch_end", "on_epoch_end", "save", "save_weights"} & set(vars(obj))
    run, budgets = _budget(cb)
    assert [b.final for b in budgets] == [
        False,
        False,
        True,
    ]  # one per epoch end, then the final one
    final = budgets[-1]
    assert sum(final.seconds.values()) == pytest.approx(
        final.wall_seconds, abs=1e-4
    )  # each value rounded to the microsecond
    assert final.seconds["unaccounted"] < 0.01 * final.wall_seconds
    rows = {(r.name, r.hook): r for r in final.callbacks}
    assert rows[("Busy", "on_train_batch_end")].calls == Busy.calls == final.steps
    assert rows[("Busy", "on_train_batch_end")].seconds >= 0.003 * Busy.calls
    assert (
        rows[("Recorder", "on_epoch_end")].calls == rows[("Recorder#2", "on_epoch_end")].calls == 2
    )
    assert rows[("ModelCheckpoint", "on_epoch_end")].kind == "checkpoint"
    saved = final.checkpoint
    assert saved.count == 2 and saved.by == {"ModelCheckpoint.on_epoch_end": 2}
    assert saved.bytes == 2 * (tmp_path / "model.keras").stat().st_size
    # each save with its start on the wall clock, inside the fit, and its length
    assert len(saved.times) == 2 and all(seconds > 0 for _start, seconds in saved.times)
    assert final.t - final.wall_seconds - 1 < saved.times[0][0] < saved.times[1][0] < final.t
    assert final.gc is not None and final.gc.count == len(final.gc.pauses)  # timed (maybe none)
    assert final.seconds["validation"] > 0 and final.seconds["startup"] > 0

    from advisor.analysis.registry import registry

    facts, errors = registry().derive(run)
    assert errors == []
    assert facts["callbacks.slowest"] == "Busy.on_train_batch_end"
    assert facts["callbacks.Busy.ms_per_step"] >= 3.0
    assert facts["checkpoint.count"] == 2 and facts["checkpoint.bytes"] == saved.bytes
    assert facts["goodput"] == pytest.approx(
        final.seconds["train_steps"] / final.wall_seconds, rel=1e-3
    )


@pytest.mark.slow
def test_a_hook_that_raises_still_raises_and_its_original_is_put_back(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("the user's own bug")

    boom = Boom()
    with pytest.raises(RuntimeError, match="the user's own bug"):
        _fit(tmp_path, [boom], epochs=1)
    assert "on_epoch_end" not in vars(boom)  # put back as the exception left the fit
    _, cb = _fit(tmp_path, [], epochs=1)  # the same process goes on training
    _, budgets = _budget(cb)
    assert budgets[-1].final


@pytest.mark.slow
def test_goodput_false_wraps_nothing(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    seen = []

    class Look(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append("on_epoch_end" in vars(self) or "save" in vars(self.model))

    _, cb = _fit(tmp_path, [Look()], epochs=1, goodput=False)
    assert seen == [False]
    _, budgets = _budget(cb)
    final = budgets[-1]
    assert final.callbacks == [] and final.seconds["callbacks"] == 0.0  # phases only
    assert sum(final.seconds.values()) == pytest.approx(
        final.wall_seconds, abs=1e-4
    )  # each value rounded to the microsecond


HUNG = textwrap.dedent("""
    import os, time
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, keras, advisor

    class SlowAfterEpoch0(keras.callbacks.Callback):
        epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            if self.epoch >= 1:
                time.sleep(0.2)  # epoch 1 crawls: the job is killed in the middle of it

    x = np.random.rand(400, 4).astype("float32"); y = np.random.rand(400, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(
        log_every_seconds=None, telemetry=False, baseline=None, window_seconds=0.5
    )
    model.fit(x, y, batch_size=8, epochs=3, callbacks=[cb, SlowAfterEpoch0()], verbose=0)
""")


@pytest.mark.slow
def test_a_job_killed_after_its_last_epoch_end_leaves_the_rest_unaccounted(tmp_path):
    """Real data on which M171 fails: the budget ends at the last epoch end, the job ran on."""
    pytest.importorskip("tensorflow")
    from advisor.service.run_service import RunService

    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG],
        env={**os.environ, "ADVISOR_RUNS_DIR": str(runs)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            files = list(runs.glob("*/worker-0.jsonl"))
            if files and '"type":"budget"' in files[0].read_text():
                break
            assert proc.poll() is None, "training ended before it was killed"
            time.sleep(0.1)
        else:
            pytest.fail("no budget record in time")
        time.sleep(
            3.0
        )  # three seconds into the slow epoch: its windows are written, its budget is not
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    report = RunService(runs).diagnose(None)
    facts = {name: fact.value for name, fact in report.facts.items()}
    assert facts["time.final"] is False and facts["run.status"] == "killed"
    # The time from the last epoch end to the last window written before the kill (0.5 s windows).
    assert facts["time.unaccounted.seconds"] >= 1.5
    m171 = next(f for f in report.findings if f.code == "M171")
    assert m171.status == "fail", m171.message


def test_a_custom_loop_budget_comes_from_its_markers(tmp_path):
    import advisor
    from advisor.store.reader import RunReader
    from advisor.store.schema import BudgetRecord

    with advisor.track(
        batch_size=4,
        runs_dir=tmp_path,
        telemetry=False,
        log_every_seconds=None,
        window_seconds=0.05,
    ) as run:
        for _ in range(2):
            for _ in range(20):
                time.sleep(0.002)
                run.step()
            with run.validation():
                time.sleep(0.05)
            run.epoch()
    budgets = RunReader(run.run_path).read().of_type(BudgetRecord)
    assert [b.final for b in budgets] == [False, False, True] and budgets[-1].source == "track"
    final = budgets[-1]
    assert sum(final.seconds.values()) == pytest.approx(
        final.wall_seconds, abs=1e-4
    )  # each value rounded to the microsecond
    assert final.seconds["validation"] >= 0.1 and final.seconds["train_steps"] >= 40 * 0.002
    assert final.steps == 40
    assert json.loads(final.model_dump_json())["checkpoint"]["count"] == 0


@pytest.mark.slow
def test_backup_and_restore_saves_are_checkpoints(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    _, cb = _fit(tmp_path, [backup], epochs=2)
    _, budgets = _budget(cb)
    saved = budgets[-1].checkpoint
    # Keras 3 backs up the weights at every epoch end (and removes the backup when the fit ends).
    assert saved.count == 2 and saved.by == {"BackupAndRestore.on_epoch_end": 2}
    assert saved.bytes and saved.bytes > 0
    rows = {(r.name, r.hook): r.kind for r in budgets[-1].callbacks}
    assert rows[("BackupAndRestore", "on_epoch_end")] == "checkpoint"


@pytest.mark.slow
def test_lambda_callback_hooks_set_on_the_instance_are_timed(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    slow = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: time.sleep(0.003))
    _, cb = _fit(tmp_path, [slow], epochs=1)
    assert "on_train_batch_end" in vars(slow)  # the user's own function is back on the instance
    assert not hasattr(vars(slow)["on_train_batch_end"], "_advisor_before")
    _, budgets = _budget(cb)
    rows = {(r.name, r.hook): r for r in budgets[-1].callbacks}
    row = rows[("LambdaCallback", "on_train_batch_end")]
    assert row.calls == budgets[-1].steps and row.seconds >= 0.003 * row.calls


@pytest.mark.slow
def test_a_fit_that_fails_outside_a_hook_leaves_no_final_budget_and_a_later_save_unwraps(tmp_path):
    pytest.importorskip("tensorflow")
    import keras

    import advisor

    def batches():
        rng = np.random.default_rng(0)
        for i in range(1000):
            if i == 30:
                raise RuntimeError("the input broke")
            x = rng.normal(size=(8, 8)).astype("float32")
            yield x, x.sum(axis=1, keepdims=True)

    class EpochHook(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            pass

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    hook = EpochHook()
    cb = advisor.AdvisorCallback(
        tmp_path / "runs", baseline=None, telemetry=False, log_every_seconds=None
    )
    with pytest.raises(Exception, match="the input broke"):  # TensorFlow wraps it (UnknownError)
        model.fit(batches(), steps_per_epoch=10, epochs=5, verbose=0, callbacks=[cb, hook])
    # Keras skipped on_train_end: the wrappers are still there, until the next save outside the fit.
    assert "save" in vars(model) and "on_epoch_end" in vars(hook)
    model.save_weights(str(tmp_path / "after.weights.h5"))
    assert (
        "save" not in vars(model)
        and "save_weights" not in vars(model)
        and "on_epoch_end" not in vars(hook)
    )
    assert (tmp_path / "after.weights.h5").stat().st_size > 0
    cb._abort("test: the fit raised")  # what the next fit or the process's exit does
    _, budgets = _budget(cb)
    assert budgets and not any(
        b.final for b in budgets
    )  # the failed run's budget ends at its last epoch end


@pytest.mark.slow
def test_s350_fails_on_checkpoints_that_dominate_a_fit_and_passes_on_small_ones(tmp_path):
    """Real data both ways. A 4.5 M-parameter model saved whole (weights and Adam's slots, ~54 MB)
    after every epoch of four small steps: a fifth to half of the wall clock here (the start-up,
    compiling the model, is most of the rest), three times S350's 5% or more. A 16-unit model
    saving its weights alone (~40 ms each quiet) after epochs that a callback keeps at 2 s: under a
    percent quiet, and under half of S350's 5% with a loaded host's slower saves (with 1 s epochs,
    one core busy, it measured 2.1%) — the measured shares are asserted, not only the verdicts."""
    pytest.importorskip("tensorflow")
    import keras

    from advisor.service.run_service import RunService

    def verdict(cb):
        report = RunService(tmp_path / "runs").diagnose(cb.run_path.name)
        s350 = next(f for f in report.findings if f.code == "S350")
        return s350, {name: fact.value for name, fact in report.facts.items()}

    big = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(1500, activation="relu"),
            keras.layers.Dense(1500, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    big.compile("adam", "mse")
    x = np.random.default_rng(0).normal(size=(32, 8)).astype("float32")
    cb = _callback(tmp_path)
    big.fit(
        x,
        x[:, :1],
        batch_size=8,
        epochs=5,
        verbose=0,
        callbacks=[cb, keras.callbacks.ModelCheckpoint(str(tmp_path / "big.keras"))],
    )
    s350, facts = verdict(cb)
    # twice S350's 5% at least (0.14 with a core busy, more on a quiet host)
    assert facts["checkpoint.count"] == 5 and facts["checkpoint.share"] > 0.05 * 2, {
        k: v for k, v in facts.items() if k.startswith(("time.", "checkpoint."))
    }
    assert s350.status == "fail" and "ModelCheckpoint" in s350.message, s350.message

    class Pace(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            time.sleep(2.0)

    _, cb = _fit(
        tmp_path,
        [
            Pace(),
            keras.callbacks.ModelCheckpoint(
                str(tmp_path / "small.weights.h5"), save_weights_only=True
            ),
        ],
        epochs=3,
    )
    s350, facts = verdict(cb)
    assert facts["checkpoint.count"] == 3 and facts["checkpoint.share"] < 0.05 / 2, facts[
        "checkpoint.share"
    ]
    assert s350.status == "pass", s350.message
