"""M103 on a short real run: a throughput that drops for the second half of an 8 s fit fails;
the windows it was judged on are fitted to the run's length and said in the evidence."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.service import Store  # noqa: E402


class SlowSecondHalf(keras.callbacks.Callback):
    """After 4 s every step waits 6 ms more (throughput falls to a fraction); stops at 8 s."""

    def on_train_begin(self, logs=None):
        self.t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        elapsed = time.perf_counter() - self.t0
        if elapsed > 4.0:
            time.sleep(0.006)
        if elapsed > 8.0:
            self.model.stop_training = True


def test_a_throughput_that_drops_for_half_the_run_fails_m103(tmp_path):
    x = np.random.default_rng(0).normal(size=(2048, 16)).astype("float32")
    y = np.zeros((2048,), "int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().repeat().prefetch(tf.data.AUTOTUNE)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = advisor.AdvisorCallback(tmp_path, baseline=None, telemetry=False, log_every_s=None)
    model.fit(ds, steps_per_epoch=1_000_000, epochs=1, verbose=0, callbacks=[cb, SlowSecondHalf()])
    finding = next(f for f in Store(tmp_path).diagnose(None).findings if f.code == "M103")
    assert finding.status == "fail", finding.message
    facts = {e.fact: e.value for e in finding.evidence}
    # 8 s has no room for three 10 s windows: it was cut into windows of about a second.
    assert facts["throughput.stability_windows"] >= 5 and facts["throughput.stability_window_s"] < 3
    assert facts["throughput.cv"] > 0.3 and "windows of" in finding.message
