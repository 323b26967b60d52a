"""The comparison on real short fits: a callback that sleeps 3 ms per batch is named, with its
hook, as the part that got slower (a step here takes a few ms, so the sleep is decisive even on
a busy machine)."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import keras
    import numpy as np

    from advisor import AdvisorCallback

    class Sleeper(keras.callbacks.Callback):
        def __init__(self, seconds: float) -> None:
            super().__init__()
            self.seconds = seconds

        def on_train_batch_end(self, batch, logs=None):
            if self.seconds:
                time.sleep(self.seconds)

    store = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(0)
    x, y = rng.random((3200, 16), dtype=np.float32), rng.random((3200, 1), dtype=np.float32)
    paths = {}
    for name, seconds in (("base", 0.0), ("slow", 0.003)):
        model = keras.Sequential(
            [keras.Input((16,)), keras.layers.Dense(64), keras.layers.Dense(1)]
        )
        model.compile("sgd", "mse")
        advisor = AdvisorCallback(
            runs_dir=store,
            name=name,
            window_seconds=0.1,
            baseline=None,
            whatif=None,
            pipeline=False,
            log_every_seconds=None,
        )
        model.fit(x, y, batch_size=64, epochs=5, verbose=0, callbacks=[Sleeper(seconds), advisor])
        paths[name] = str(advisor.writer.path)
    return store, paths


def test_a_sleeping_callback_is_named_as_the_part_that_regressed(runs):
    from advisor.service import RunService

    store, paths = runs
    report = RunService(store).diagnose(paths["slow"], select=["P702"], baseline=paths["base"])
    comparison = report.regression.comparison
    assert comparison is not None
    hook = next(p for p in comparison.parts if p.key == "part.callback.Sleeper.on_train_batch_end")
    assert hook.verdict == "slower" and hook.regressed
    assert hook.change == pytest.approx(3.0, abs=2.0)  # ms per step: the sleep, and its overshoot
    assert comparison.failed and "`on_train_batch_end` of `Sleeper`" in comparison.summary
    assert {p.key for p in comparison.parts} >= {"part.train_steps", "part.startup"}
    assert comparison.rates[0].baseline_n >= 3 and comparison.rates[0].current_n >= 3
