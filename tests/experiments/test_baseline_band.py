"""The noise band on real fits, while another process keeps one core busy (as on shared CI).

A healthy run (input cached and prefetched, a step of several milliseconds) must come out
"inside the band": no measurable input cost. An input far slower than the step (30×, and at
least 60 ms a batch: a sleep, which load does not stretch, while a busy machine can slow the step
tenfold) must come out far outside it. The time allowance must shorten the segments, cap the
rounds and say so.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from advisor.experiments.baseline.engine import measure_input
from advisor.noise import MIN_ROUNDS

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

FEATURES, CLASSES, BATCH = 32, 4, 32
SPIN = """
import os, sys, time
parent = int(sys.argv[1])
while True:
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        pass
    try:
        os.kill(parent, 0)
    except OSError:
        break
"""


@pytest.fixture(scope="module")
def busy_core():
    """A pure-Python spin in another process for the module's duration (ends with its parent)."""
    import os

    spin = subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
    try:
        yield spin.pid
    finally:
        spin.kill()
        spin.wait(timeout=10)


def arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, FEATURES)).astype("float32"), rng.integers(0, CLASSES, n).astype(
        "int64"
    )


def mlp(width: int) -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def wide_model() -> keras.Model:
    """Two 1024-wide layers: a step of ~6 ms on two CPU cores, long enough to dwarf what a cached,
    prefetched tf.data pipeline costs per batch (tens of microseconds)."""
    return mlp(1024)


def healthy_dataset() -> tf.data.Dataset:
    n = 64 * BATCH
    return (
        tf.data.Dataset.from_tensor_slices(arrays(n))
        .cache()
        .shuffle(n, seed=0)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )


def slow_dataset(step_s: float) -> tf.data.Dataset:
    """Each batch waits 30 times the model's step (60–200 ms) in Python, no prefetch."""

    def wait(x, y):
        time.sleep(min(max(30 * step_s, 0.06), 0.2))
        return x, y

    def load(x, y):
        xo, yo = tf.py_function(wait, [x, y], [tf.float32, tf.int64])
        return tf.ensure_shape(xo, [None, FEATURES]), tf.ensure_shape(yo, [None])

    return tf.data.Dataset.from_tensor_slices(arrays(16 * BATCH)).batch(BATCH).map(load)


@pytest.fixture(scope="module")
def model(busy_core) -> keras.Model:
    m = wide_model()
    m.fit(healthy_dataset(), epochs=1, verbose=0)
    return m


@pytest.fixture(scope="module")
def small_model(busy_core) -> keras.Model:
    """Two 128-wide layers: a ~1 ms step, so that a far slower input stays quick to measure."""
    m = mlp(128)
    m.fit(healthy_dataset(), epochs=1, verbose=0)
    return m


def step_seconds(model: keras.Model) -> float:
    """The model's step time on cached input, measured here: the fastest of five 10-step runs
    (one stalled run would otherwise make the slow input's sleep, and the test, far longer)."""
    cached = healthy_dataset().take(1).cache().repeat()
    model.fit(cached, steps_per_epoch=5, epochs=1, verbose=0)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        model.fit(cached, steps_per_epoch=10, epochs=1, verbose=0)
        times.append((time.perf_counter() - t0) / 10)
    return min(times)


def test_a_healthy_run_under_load_is_inside_the_band(model, busy_core):
    result = measure_input(
        model, healthy_dataset(), seconds=2.0, source_cache=False, data_only=False
    )
    assert result.rounds == 12
    band = result.bound
    assert band is not None
    # No measurable input cost: whatever the load did to single rounds, zero is inside the band.
    assert result.bound_outside_band is False, (band, result.round_rates)
    assert "inside the noise band" in result.summary()


def test_an_input_far_slower_than_the_step_is_far_outside_the_band(small_model, busy_core):
    step_s = step_seconds(small_model)
    result = measure_input(
        small_model, slow_dataset(step_s), seconds=2.0, source_cache=False, data_only=False
    )
    band = result.bound
    assert band is not None and result.bound_outside_band is True
    # The input costs ~97 % of each round (still ~80 % if load slows the step tenfold): even the
    # lower edge of the band is far above zero.
    assert band.value > 0.6 and band.value - band.half_width > 0.5, (
        step_s,
        band,
        result.round_rates,
    )


def test_the_allowance_shortens_segments_then_caps_the_rounds_and_says_so(model, busy_core):
    """A segment stops at the first step that ends after its deadline, so the allowance holds to
    within a step per segment: a machine that stalls one step for seconds overruns it by that
    much. The bounds below are therefore half of what the measurement would take unbounded."""
    # 30 s asked for, 2 s allowed: the segments shrink so that the rounds fit.
    t0 = time.perf_counter()
    result = measure_input(
        model, healthy_dataset(), seconds=30.0, max_seconds=2.0, source_cache=False, data_only=False
    )
    wall = time.perf_counter() - t0
    assert result.budget_seconds == 2.0 and result.rounds >= 1
    assert result.stopped is None or "time allowance (2 s)" in result.stopped
    assert wall < 15.0  # unbounded: 30 s
    # 2400 steps per arm (200 per segment, >= 1.2 s of ~6 ms steps) cannot fit 12 rounds in 2 s:
    # the segments are capped so that 3 rounds fit, and the record says why it stopped.
    t0 = time.perf_counter()
    result = measure_input(
        model,
        healthy_dataset(),
        steps=2400,
        seconds=1.0,
        max_seconds=2.0,
        source_cache=False,
        data_only=False,
    )
    wall = time.perf_counter() - t0
    assert 1 <= result.rounds < 12
    assert result.stopped and "time allowance (2 s)" in result.stopped
    assert any("stopped early" in note for note in result.notes)
    # With fewer than 3 paired rounds there is no band, and no cost either.
    paired = sum(
        1 for r, c in zip(result.round_rates["real"], result.round_rates["cached"]) if r and c
    )
    assert (result.bound is None) == (paired < MIN_ROUNDS) == (result.bound_fraction is None)
    assert wall < 15.0  # unbounded: 12 rounds x 2 segments of >= 1.2 s
