"""A failing collector never reaches fit(): logged once, recorded once, switched off."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.collectors.collector import Collector  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import EpochRecord, EventRecord, WindowRecord  # noqa: E402

pytestmark = pytest.mark.slow  # trains a model or starts a process


class BrokenInBatch(Collector):
    name = "broken-batch"
    batch_hook = True

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def on_train_batch_end(self, batch: int) -> None:
        self.calls += 1
        raise RuntimeError("batch hook exploded")


class BrokenInEpoch(Collector):
    name = "broken-epoch"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def on_epoch_end(self, epoch, logs) -> None:
        self.calls += 1
        raise ValueError("epoch hook exploded")


def test_raising_collectors_do_not_stop_fit(runs_dir):
    from advisor.collectors.options import AdvisorOptions
    from advisor.collectors.registry import build_collectors

    x = np.random.rand(256, 4).astype("float32")
    y = np.random.rand(256, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    batch, epoch = BrokenInBatch(), BrokenInEpoch()
    collectors = build_collectors(AdvisorOptions(window_seconds=0.05, log_every_seconds=None)) + [
        batch,
        epoch,
    ]
    cb = advisor.AdvisorCallback(runs_dir=runs_dir, collectors=collectors, log_every_seconds=None)
    history = model.fit(x, y, batch_size=32, epochs=3, callbacks=[cb], verbose=0)

    assert len(history.history["loss"]) == 3  # training went on to the end
    assert batch.calls == 1 and epoch.calls == 1  # switched off after the first failure
    run = RunReader(cb.run_path).read()
    errors = [e for e in run.of_type(EventRecord) if e.level == "error"]
    assert sorted(e.source for e in errors) == ["broken-batch", "broken-epoch"]
    assert any("batch hook exploded" in e.message for e in errors)
    # The healthy collectors kept recording.
    assert len(run.of_type(EpochRecord)) == 3 and run.of_type(WindowRecord)
    assert run.status == "finished"


def test_exception_in_fit_marks_the_run_failed(runs_dir):
    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyboardInterrupt  # what a user's Ctrl-C looks like to fit

    x = np.random.rand(64, 4).astype("float32")
    y = np.random.rand(64, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(runs_dir=runs_dir, log_every_seconds=None)
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=32, epochs=2, callbacks=[cb, Boom()], verbose=0)
    first = cb.run_path
    # The next fit with the same callback closes the previous run as failed.
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[cb], verbose=0)
    assert RunReader(first).read().status == "failed"
    assert RunReader(cb.run_path).read().status == "finished"


def test_collector_that_cannot_start_leaves_training_alone(runs_dir, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store should be")
    x = np.random.rand(64, 4).astype("float32")
    y = np.random.rand(64, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(runs_dir=blocker, log_every_seconds=None)
    history = model.fit(x, y, batch_size=32, epochs=2, callbacks=[cb], verbose=0)
    assert len(history.history["loss"]) == 2
    assert cb.run_path is None
