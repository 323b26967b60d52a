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
from advisor.analysis.stability import robust_cv  # noqa: E402
from advisor.service import RunService  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import WindowRecord  # noqa: E402


class SlowSecondHalf(keras.callbacks.Callback):
    """After 4 s every step waits 20 ms more (throughput falls to a small fraction of a ~1 ms
    step's, also when a busy host makes that step several times slower); stops at 8 s."""

    def on_train_begin(self, logs=None):
        self.t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        elapsed = time.perf_counter() - self.t0
        if elapsed > 4.0:
            time.sleep(0.020)
        if elapsed > 8.0:
            self.model.stop_training = True


def test_a_throughput_that_drops_for_half_the_run_fails_m103(tmp_path):
    x = np.random.default_rng(0).normal(size=(2048, 16)).astype("float32")
    y = np.zeros((2048,), "int64")
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(32)
        .cache()
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = advisor.AdvisorCallback(tmp_path, baseline=None, telemetry=False, log_every_seconds=None)
    model.fit(ds, steps_per_epoch=1_000_000, epochs=1, verbose=0, callbacks=[cb, SlowSecondHalf()])
    finding = next(f for f in RunService(tmp_path).diagnose(None).findings if f.code == "M103")
    assert finding.status == "fail", finding.message
    facts = {e.fact: e.value for e in finding.evidence}
    # 8 s has no room for three 10 s windows: it was cut into windows of about a second.
    assert facts["throughput.stability_windows"] >= 5 and facts["throughput.stability_window_s"] < 3
    assert facts["throughput.cv"] > 0.3 and "windows of" in finding.message


class SlowEveryOtherEpochStart(keras.callbacks.Callback):
    """Every other epoch waits WAIT_S before its first step (an epoch-begin callback standing for
    a slow iterator rebuild); training stops after 5 s and at least 10 epochs (enough windows for
    M103 to judge the recorded windows themselves, however slow the host)."""

    def on_train_begin(self, logs=None):
        self.t0 = time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        if epoch % 2:
            time.sleep(WAIT_S)

    def on_epoch_end(self, epoch, logs=None):
        if epoch >= 9 and time.perf_counter() - self.t0 > 5.0:
            self.model.stop_training = True


WAIT_S = 1.0  # beside ~0.3 s of steps an epoch (~1 s on a busy host): a share far above 0.2


def _fit(tmp_path, ds, callbacks, **kwargs):
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(512, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    cb = advisor.AdvisorCallback(tmp_path, baseline=None, telemetry=False, log_every_seconds=None)
    model.fit(ds, verbose=0, callbacks=[cb, *callbacks], **kwargs)
    return {f.code: f for f in RunService(tmp_path).diagnose(None).findings}


def test_slow_epoch_starts_fail_m154_and_leave_stability_alone(tmp_path):
    """Half the epochs wait 1 s for their first step: M154 fails with the measured share. M103
    judges the steps without those waits: its spread is the one of the windows' stepping rates,
    not the one their wall times would give.

    (This test used to assert M103's spread < 0.5. That was not decisive: a fresh-clone run beside
    other jobs read 0.58 from 0.4 s windows of steps alone, and 0.40 in another. It now asserts the
    measured fact, which rates were judged; with the waits counted in, the same run read 1.03.)"""
    x = np.random.default_rng(0).normal(size=(6400, 16)).astype("float32")
    y = np.zeros((6400,), "int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE)
    findings = _fit(tmp_path, ds, [SlowEveryOtherEpochStart()], epochs=1000)
    m154 = findings["M154"]
    assert m154.status == "fail", m154.message
    facts = {e.fact: e.value for e in m154.evidence}
    # Half the measured epoch starts wait 1 s: the share is far above the 5% threshold.
    assert facts["time.epoch_starts"] >= 3 and facts["time.epoch_start_s.max"] >= WAIT_S
    assert facts["time.epoch_start_fraction"] > 0.2

    run = RunReader(next(p for p in tmp_path.iterdir() if p.is_dir())).read()
    windows = [
        w
        for w in run.of_type(WindowRecord, rank=run.ranks[0])
        if not (w.warmup or w.profiled) and w.seconds > 0 and w.steps > 0
    ]
    waited = [w for w in windows if (w.epoch_start_seconds or 0.0) >= WAIT_S]
    assert len(windows) >= 6 and len(waited) >= 3  # one window an epoch; every other one waited
    stepping = [w.steps / (w.seconds - (w.epoch_start_seconds or 0.0)) for w in windows]
    walled = [w.steps / w.seconds for w in windows]
    # counted in, each wait cuts its window's rate by far (1 s beside ~0.3 s of steps)
    assert all(
        w.steps / w.seconds < 0.8 * w.steps / (w.seconds - w.epoch_start_seconds) for w in waited
    )
    m103 = {e.fact: e.value for e in findings["M103"].evidence}
    assert m103["throughput.stability_windows"] == len(windows)
    assert m103["throughput.cv"] == pytest.approx(robust_cv(stepping), rel=1e-6), findings[
        "M103"
    ].message
    assert robust_cv(walled) != pytest.approx(m103["throughput.cv"], rel=0.05)


def test_one_iterator_for_all_epochs_passes_m154(tmp_path):
    """The same data repeated, with steps_per_epoch: Keras keeps one iterator, and epochs start
    at once."""
    x = np.random.default_rng(0).normal(size=(6400, 16)).astype("float32")
    y = np.zeros((6400,), "int64")
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(32)
        .cache()
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )
    findings = _fit(tmp_path, ds, [], epochs=12, steps_per_epoch=200)
    m154 = findings["M154"]
    assert m154.status == "pass", m154.message
    facts = {e.fact: e.value for e in m154.evidence}
    assert facts["time.epoch_starts"] >= 10 and facts["time.epoch_start_fraction"] < 0.05
