"""Throughput and epoch collectors against ground truth on real TensorFlow fits.

The ground truth is a layer that counts, inside the compiled train step, the samples it sees.
"""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import advisor  # noqa: E402
from advisor.analysis.registry import registry  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import ContextRecord, EpochRecord, FirstStepRecord, WindowRecord  # noqa: E402

pytestmark = pytest.mark.slow  # trains a model or starts a process


class SampleCounter(keras.layers.Layer):
    """Identity layer that adds the batch size to a counter on every training call."""

    def build(self, input_shape):
        self.count = self.add_weight(
            shape=(), initializer="zeros", trainable=False, dtype="int64", name="count"
        )

    def call(self, x, training=None):
        if training:
            self.count.assign_add(tf.cast(tf.shape(x)[0], "int64"))
        return x


def build(spe: int = 1):
    counter = SampleCounter()
    model = keras.Sequential(
        [
            keras.Input((8,)),
            counter,
            keras.layers.Dense(4, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=spe)
    counter.count.assign(0)
    return model, counter


def fit_and_read(model, runs_dir, *args, **kwargs):
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, window_seconds=0.05, warmup_steps=3, log_every_seconds=None
    )
    if not isinstance(args[0], np.ndarray):
        kwargs.setdefault("shuffle", False)  # a tf.data input is shuffled by its own pipeline
    model.fit(*args, callbacks=[cb], verbose=0, **kwargs)
    return RunReader(cb.run_path).read()


def data(n: int):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 8)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


@pytest.mark.parametrize("spe", [1, 4])
def test_numpy_partial_batch_counts_every_sample(runs_dir, spe):
    x, y = data(1000)  # 1000 = 15 × 64 + 40: the last batch is partial
    model, counter = build(spe)
    run = fit_and_read(model, runs_dir, x, y, batch_size=64, epochs=2)
    trained = int(counter.count.numpy())
    assert trained == 2000
    epochs = run.of_type(EpochRecord)
    assert [e.samples for e in epochs] == [1000, 1000]
    assert [e.steps for e in epochs] == [16, 16]
    windows = run.of_type(WindowRecord)
    assert sum(w.samples for w in windows) == trained
    assert sum(w.steps for w in windows) == 32
    # Warm-up windows exist and are kept apart; real steps come from optimizer.iterations.
    assert windows[0].warmup and not windows[-1].warmup
    assert windows[-1].step_end == 32


@pytest.mark.parametrize("spe", [1, 4])
def test_tf_data_partial_batch(runs_dir, spe):
    x, y = data(300)  # 300 = 9 × 32 + 12
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    model, counter = build(spe)
    run = fit_and_read(model, runs_dir, ds, epochs=2)
    trained = int(counter.count.numpy())
    assert trained == 600
    assert [e.samples for e in run.of_type(EpochRecord)] == [300, 300]
    assert sum(w.samples for w in run.of_type(WindowRecord)) == trained


def test_steps_per_epoch_on_repeated_data(runs_dir):
    x, y = data(256)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(16)
    # 10 steps per epoch is not a multiple of 3: Keras rounds each epoch up to whole executions
    # (4 × 3 = 12 steps). Counting hook calls × 3 or trusting steps_per_epoch would both be wrong
    # somewhere; optimizer.iterations deltas and the in-graph counter agree.
    model, counter = build(spe=3)
    run = fit_and_read(model, runs_dir, ds, epochs=3, steps_per_epoch=10)
    trained = int(counter.count.numpy())
    steps_done = int(model.optimizer.iterations.numpy())
    assert trained == steps_done * 16
    assert sum(e.steps for e in run.of_type(EpochRecord)) == steps_done
    assert sum(e.samples for e in run.of_type(EpochRecord)) == trained
    assert sum(w.samples for w in run.of_type(WindowRecord)) == trained


def test_validation_time_is_split_from_training(runs_dir):
    x, y = data(512)
    model, _ = build()
    run = fit_and_read(model, runs_dir, x, y, batch_size=32, epochs=2, validation_split=0.25)
    epochs = run.of_type(EpochRecord)
    assert all(e.val_seconds > 0 for e in epochs)
    assert all(abs(e.seconds - e.train_seconds - e.val_seconds) < 1e-6 for e in epochs)
    assert [e.samples for e in epochs] == [384, 384]
    assert len(run.of_type(FirstStepRecord)) == 1


def test_context_and_manifest(runs_dir):
    x, y = data(1280)
    model, _ = build(spe=2)
    es = keras.callbacks.EarlyStopping(monitor="loss", patience=5)
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, instance_type="g5.xlarge", tags={"team": "ml"}, log_every_seconds=None
    )
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[es, cb], verbose=0)
    run = RunReader(cb.run_path).read()
    m = run.manifest
    assert m.global_batch_size == 32 and m.steps_per_execution == 2
    assert m.framework.backend == "tensorflow" and m.price_per_hour == pytest.approx(1.006)
    assert m.price_source.startswith("table:") and m.tags == {"team": "ml"}
    values = run.of_type(ContextRecord)[0].values
    assert values["context.early_stopping"] is True
    assert values["context.input_kind"] == "numpy"
    assert "EarlyStopping" in values["context.callbacks"]
    facts, errors = registry().derive(run)
    assert errors == []
    assert facts["cost.samples_per_dollar"] == pytest.approx(
        facts["throughput.samples_per_s"] * 3600 / 1.006
    )


def test_explicit_price_wins(runs_dir):
    x, y = data(64)
    model, _ = build()
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, instance_type="g5.xlarge", price_per_hour=2.0, log_every_seconds=None
    )
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[cb], verbose=0)
    m = RunReader(cb.run_path).read().manifest
    assert (m.price_per_hour, m.price_source) == (2.0, "argument")


def test_each_fit_is_a_new_run(runs_dir):
    x, y = data(64)
    model, _ = build()
    cb = advisor.AdvisorCallback(runs_dir=runs_dir, log_every_seconds=None)
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[cb], verbose=0)
    first = cb.run_path
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[cb], verbose=0)
    assert cb.run_path != first
    assert RunReader(first).read().status == "finished"
    assert len(RunReader(cb.run_path).read().of_type(EpochRecord)) == 1


def test_periodic_log_line(runs_dir, caplog):
    x, y = data(256)
    model, _ = build()
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        window_seconds=0.05,
        warmup_steps=0,
        log_every_seconds=0.0,
        price_per_hour=3.0,
    )
    lines = _log_lines(
        caplog, lambda: model.fit(x, y, batch_size=32, epochs=1, callbacks=[cb], verbose=0)
    )
    assert lines and "samples/$ at $3.00/h" in lines[-1]


def test_the_log_line_comes_as_often_as_asked_not_at_every_epoch(runs_dir, caplog):
    # Many short epochs with a line asked for once a minute: one line, at the first epoch end.
    x, y = data(64)
    model, _ = build()
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        window_seconds=0.05,
        warmup_steps=0,
        log_every_seconds=60.0,
        baseline=None,
        telemetry=False,
    )
    lines = _log_lines(
        caplog, lambda: model.fit(x, y, batch_size=16, epochs=12, callbacks=[cb], verbose=0)
    )
    assert len(lines) == 1 and "goodput" in lines[0]


def _log_lines(caplog, fit):
    """The advisor's samples/s log lines while ``fit()`` runs (the advisor's logger may not
    propagate, so caplog's handler is put on it for the fit)."""
    import logging

    logger = logging.getLogger("advisor")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="advisor"):
            fit()
    finally:
        logger.removeHandler(caplog.handler)
    # caplog's handler is on the root logger too: one record may be captured twice
    return list(
        {id(r): r.getMessage() for r in caplog.records if "samples/s" in r.getMessage()}.values()
    )


def _multiworker_run(runs_dir, strategy: str):
    """Two workers' files written as tf.distribute (global batch on each) or Horovod would."""
    import time as _t

    from advisor.store.schema import WindowRecord as W
    from advisor.store.writer import RunWriter

    chief = RunWriter(
        runs_dir, run_id=f"mw-{strategy}", manifest={"strategy": strategy, "num_workers": 2}
    )
    other = RunWriter(runs_dir, run_id=f"mw-{strategy}", rank=1)
    for writer in (chief, other):
        for i in range(3):
            writer.write(
                W(
                    t=_t.time(),
                    epoch=0,
                    seconds=1.0,
                    steps=10,
                    samples=640,
                    step_begin=i * 10,
                    step_end=(i + 1) * 10,
                )
            )
        writer.close()
    return RunReader(chief.path).read()


def test_multiworker_throughput_counts_the_global_batch_once(runs_dir):
    # tf.distribute multi-worker: every worker saw the global batch of 64 → 640 samples/s in all.
    facts, _ = registry().derive(_multiworker_run(runs_dir, "MultiWorkerMirroredStrategy"))
    assert facts["throughput.samples_per_s"] == pytest.approx(640.0)
    assert facts["throughput.samples_per_s.p50"] == pytest.approx(640.0)
    # Horovod: each worker fed its own batch of 64 → the samples add up.
    facts, _ = registry().derive(_multiworker_run(runs_dir, "Horovod"))
    assert facts["throughput.samples_per_s"] == pytest.approx(1280.0)
    assert facts["throughput.samples_per_s.p50"] == pytest.approx(1280.0)


class SlowEpochStart(keras.callbacks.Callback):
    """Stands for an expensive epoch start (an input iterator that fills a large buffer): it
    sleeps after the advisor's on_epoch_begin and before the epoch's first step."""

    def on_epoch_begin(self, epoch, logs=None):
        import time

        time.sleep(0.4)


def test_an_epoch_start_stall_is_in_the_window_time_but_is_not_a_step(runs_dir):
    x, y = data(64 * 40)
    model, _ = build()
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, window_seconds=60, warmup_steps=0, log_every_seconds=None, baseline=None
    )
    model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[cb, SlowEpochStart()])
    run = RunReader(cb.run_path).read()
    windows = run.of_type(WindowRecord)
    assert len(windows) == 3  # one window per epoch: 40 steps take far less than 60 s
    for w in windows:
        # The sleep is before the first step: it is the window's time, not a step's.
        assert w.epoch_start_seconds is not None and w.epoch_start_seconds >= 0.4
        assert w.seconds >= w.epoch_start_seconds
        assert w.step_count == 40
    for w in windows[1:]:  # (epoch 0's first step compiles the train function)
        assert w.step_time_max is not None and w.step_time_max < w.epoch_start_seconds
        assert w.step_outlier_seconds is not None and w.step_outlier_seconds < 0.4


def test_an_epoch_start_longer_than_a_window_is_in_the_window_that_records_it(runs_dir):
    # 0.4 s of epoch start are eight 50 ms windows. The epoch's first window counts its length
    # from the first step: counted from epoch begin, it was due at the first step's begin, closed
    # there with no step of its own and wrote nothing, and the next window recorded a start that
    # was not in its seconds.
    x, y = data(64 * 40)
    model, _ = build()
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir,
        window_seconds=0.05,
        warmup_steps=0,
        log_every_seconds=None,
        baseline=None,
    )
    model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[cb, SlowEpochStart()])
    run = RunReader(cb.run_path).read()
    assert run.problems == []
    windows = run.of_type(WindowRecord)
    for epoch in range(3):
        mine = [w for w in windows if w.epoch == epoch]
        assert sum(w.steps for w in mine) == 40
        assert [w.epoch_start_seconds is not None for w in mine] == [True] + [False] * (
            len(mine) - 1
        )  # the epoch's first window records its start ...
        start = mine[0].epoch_start_seconds
        assert start >= 0.4 and mine[0].seconds >= start  # ... and holds it
        for w in mine:  # every window timed its own steps, one interval a step
            assert w.step_count == w.steps, w


class SlowLastStep(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch >= 9:  # the epoch's last step (index 9; 11 for the last execution of 4 steps)
            import time

            time.sleep(0.1)


@pytest.mark.parametrize("spe", [1, 4])
def test_an_input_of_unknown_length_is_counted_as_it_ran(runs_dir, spe):
    # tf.data cannot tell a filtered pipeline's length: 300 rows in batches of 32 are 10 steps,
    # the last of 12 samples. Keras 3 counts an 11th optimizer step (the one that found the end)
    # with steps_per_execution 1, and a 12-step last execution by batch index with 4; the run must
    # record what trained: 10 steps and 300 samples an epoch, also with validation after it
    # (which resets the loss tracker the sample count comes from).
    x, y = data(300)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).filter(lambda a, b: True)
    assert int(ds.cardinality()) == int(tf.data.UNKNOWN_CARDINALITY)
    # A window closes at the first batch begin after its time is up; the last real step's end
    # sleeps past that time, so on TensorFlow with one step per execution a window closes at the
    # batch Keras begins to find the end, holding the short batch.
    model, _ = build(spe)
    cb = advisor.AdvisorCallback(
        runs_dir=runs_dir, log_every_seconds=None, baseline=None, window_seconds=0.05
    )
    model.fit(
        ds,
        epochs=2,
        callbacks=[cb, SlowLastStep()],
        verbose=0,
        shuffle=False,
        validation_data=(x[:50], y[:50]),
    )
    run = RunReader(cb.run_path).read()
    assert [(e.steps, e.samples) for e in run.of_type(EpochRecord)] == [(10, 300), (10, 300)]
    windows = run.of_type(WindowRecord)
    for epoch in (0, 1):
        mine = [w for w in windows if w.epoch == epoch]
        assert sum(w.steps for w in mine) == 10 and sum(w.samples for w in mine) == 300
    assert (
        cb.session.tally is not None and cb.session.tally.steps == 10
    )  # the what-if's epoch length
