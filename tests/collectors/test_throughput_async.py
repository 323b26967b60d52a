"""Throughput windows when Keras runs the batch-end hooks late, on its worker threads.

Keras 3 on JAX (and torch) dispatches the batch-end hooks of async-safe callbacks to a thread
pool: the training thread goes on to the next batch while they wait their turn, and on a busy host
they may still wait when a window closes. The step counter read at the close counts those steps;
their batch-end stamps reach the collector after it, in the next window. Counted as the next
window's intervals, they once gave a window seven intervals for five steps (a JAX fit with two
warm-up steps, on a busy 2-core host), and the reader refused it.

Here the lateness is made certain rather than left to the host's load: a callback ahead of the
advisor holds the warm-up steps' batch ends on Keras's worker threads until a callback after it
has seen the training thread begin the step after warm-up, where the advisor closes the warm-up
window. Everything else is real: Keras's dispatch, a JAX fit, the run as written and read. The
backend is chosen before Keras is imported, so the fit runs in a process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from advisor.store.reader import RunReader
from advisor.store.schema import WindowRecord

pytestmark = pytest.mark.slow  # trains a model in a process of its own

WARMUP = 2
STEPS = 10  # an epoch: 320 samples in batches of 32
EPOCHS = 2

FIT = f"""
import sys, threading
import numpy as np
import keras
import advisor

released = threading.Event()


class LateBatchEnds(keras.callbacks.Callback):
    # Ahead of the advisor: the warm-up steps' batch ends wait on Keras's worker threads until
    # the training thread has begun the step after warm-up. async_safe keeps Keras's dispatch on.
    async_safe = True

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.epoch == 0 and batch < {WARMUP} and not released.wait(120):
            raise RuntimeError("the step after warm-up never began")


class Release(keras.callbacks.Callback):
    # After the advisor: the advisor has closed the warm-up window when this runs.
    def on_train_batch_begin(self, batch, logs=None):
        if batch == {WARMUP}:
            released.set()


rng = np.random.default_rng(0)
x = rng.normal(size=({STEPS} * 32, 8)).astype("float32")
y = rng.normal(size=({STEPS} * 32, 1)).astype("float32")
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer="sgd", loss="mse")
cb = advisor.AdvisorCallback(
    runs_dir=sys.argv[1],
    window_seconds=60,
    warmup_steps={WARMUP},
    log_every_seconds=None,
    baseline=None,
    telemetry=False,
)
assert cb.async_safe
model.fit(
    x, y, batch_size=32, epochs={EPOCHS}, shuffle=False, verbose=0,
    callbacks=[LateBatchEnds(), cb, Release()],
)
assert released.is_set()
print(cb.run_path)
"""


def test_batch_ends_that_arrive_after_their_window_closed(tmp_path):
    pytest.importorskip("jax")
    done = subprocess.run(
        [sys.executable, "-c", FIT, str(tmp_path)],
        env={**os.environ, "KERAS_BACKEND": "jax"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = RunReader(done.stdout.strip().splitlines()[-1]).read()
    assert run.problems == []  # the reader refused no window
    windows = run.of_type(WindowRecord)
    assert sum(w.steps for w in windows) == EPOCHS * STEPS
    assert sum(w.samples for w in windows) == EPOCHS * STEPS * 32
    (warmup,) = [w for w in windows if w.warmup]
    # The warm-up window closed before any of its batch ends came: it has steps and no interval.
    assert warmup.steps == WARMUP and warmup.step_count is None
    for w in windows:
        if not w.warmup:
            # Sixty-second windows: the rest of each epoch is one window, closed at the epoch's
            # end, after Keras has run every queued batch end. Each step has its interval; the
            # two that came late belong to the warm-up window, not to this one.
            assert w.step_count == w.steps, w
    assert [w.steps for w in windows if not w.warmup] == [STEPS - WARMUP, STEPS]
