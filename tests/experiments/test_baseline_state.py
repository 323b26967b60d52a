"""The baseline leaves the job exactly as the fit left it: weights, optimizer and metric state,
the user's data (shuffle order, PyDataset epoch hooks, generators) and the global random
generators. Each test compares a fit with the baseline against the same fit without it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import advisor  # noqa: E402

FEATURES = 8
QUICK = {
    "baseline": "end",
    "baseline_seconds": 0.4,
    "baseline_rounds": 3,
    "telemetry": False,
    "log_every_seconds": None,
}


def model() -> keras.Model:
    keras.utils.set_random_seed(0)
    m = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dropout(0.1),
            keras.layers.Dense(3),
        ]
    )
    m.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return m


def arrays(n: int = 256):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, FEATURES)).astype("float32"), rng.integers(0, 3, n).astype("int64")


def state(m: keras.Model) -> list[np.ndarray]:
    values = [np.array(v.numpy()) for v in m.variables]
    values += [np.array(v.numpy()) for v in m.optimizer.variables]
    return values + [np.array(v.numpy()) for metric in m.metrics for v in metric.variables]


class Snapshot(keras.callbacks.Callback):
    """The model's state at train end, before or after the advisor's own train-end work."""

    def on_train_end(self, logs=None) -> None:
        self.state = state(self.model)


def test_weights_optimizer_and_metrics_are_bit_for_bit_as_the_fit_left_them(tmp_path):
    x, y = arrays()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    before, after = Snapshot(), Snapshot()
    m = model()
    m.fit(
        ds,
        epochs=2,
        verbose=0,
        callbacks=[before, advisor.AdvisorCallback(tmp_path, **QUICK), after],
    )
    assert m.optimizer.iterations.numpy() == 16
    assert len(before.state) == len(after.state)
    assert all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(before.state, after.state)
    )


def _next_orders(baseline: bool, tmp_path) -> tuple[list[list[int]], tuple[float, float]]:
    """Fit on a seeded, reshuffling dataset; then the order of the next two passes over it and
    the next draws of Python's and NumPy's global generators."""
    random.seed(1)
    np.random.seed(1)
    tf.random.set_seed(1)
    ds = (
        tf.data.Dataset.range(64)
        .shuffle(64, seed=3)
        .map(lambda i: (tf.fill([FEATURES], tf.cast(i, tf.float32)), i % 3))
        .batch(16)
    )
    callbacks = [advisor.AdvisorCallback(tmp_path, **QUICK)] if baseline else []
    model().fit(ds, epochs=2, verbose=0, callbacks=callbacks)
    orders = [
        [int(v) for v in batch[1].numpy()] + [int(batch[0][0, 0].numpy())] for batch in ds.take(2)
    ]
    orders += [[int(batch[0][0, 0].numpy()) for batch in ds]]
    return orders, (random.random(), float(np.random.random()))


def test_the_datasets_shuffle_order_and_the_global_generators_are_untouched(tmp_path):
    with_baseline = _next_orders(True, tmp_path / "a")
    without = _next_orders(False, tmp_path / "b")
    # The baseline iterated its own copy of the pipeline many times; the user's dataset gives the
    # epochs after the fit in the same order as without it, and the global generators continue
    # where they were.
    assert with_baseline == without


def test_a_pydatasets_epoch_hooks_and_a_generator_are_left_alone(tmp_path, monkeypatch):
    x, y = arrays(128)

    class Counted(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__()
            self.epoch_ends = 0
            self.order = np.arange(4)

        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int):
            j = self.order[i]
            return x[j * 32 : (j + 1) * 32], y[j * 32 : (j + 1) * 32]

        def on_epoch_end(self) -> None:
            self.epoch_ends += 1
            self.order = np.random.permutation(4)

    plain, measured = Counted(), Counted()
    np.random.seed(5)
    model().fit(plain, epochs=2, verbose=0)
    expected = (plain.epoch_ends, plain.order.tolist(), np.random.random())
    np.random.seed(5)
    cb = advisor.AdvisorCallback(tmp_path, **QUICK)
    model().fit(measured, epochs=2, verbose=0, callbacks=[cb])
    assert (measured.epoch_ends, measured.order.tolist(), np.random.random()) == expected

    # baseline="auto" never trains on a one-shot generator: it records why it skipped. (Keras
    # itself prefetches from a generator on a thread, so how far the generator has gone after
    # fit varies from run to run, with or without the advisor.) The fit is far too short for
    # "auto" to measure at all; sized as if it were long enough, the generator is the only
    # reason left to skip.
    import advisor.collectors.baseline as baseline_collector
    from advisor.experiments.baseline import ONE_SHOT, Sizing

    monkeypatch.setattr(
        baseline_collector, "auto_sizing", lambda *a, **k: Sizing(seconds=0.4, max_seconds=10.0)
    )
    pulled = []

    def batches():
        for i in range(1000):
            pulled.append(i)
            yield x[(i % 4) * 32 : (i % 4 + 1) * 32], y[(i % 4) * 32 : (i % 4 + 1) * 32]

    auto = advisor.AdvisorCallback(tmp_path, telemetry=False, log_every_seconds=None)
    model().fit(batches(), steps_per_epoch=4, epochs=2, verbose=0, callbacks=[auto])
    assert len(pulled) < 8 + 16  # the 8 training steps and Keras's prefetch, no baseline rounds
    from advisor.store.reader import RunReader
    from advisor.store.schema import BaselineRecord

    record = RunReader(auto.run_path).read().of_type(BaselineRecord)[-1]
    assert record.mode == "auto" and record.skipped == ONE_SHOT and record.steps == 0


def test_a_pydataset_with_workers_leaves_no_threads_behind(tmp_path, threads_left):
    """The baseline's segments stop inside an epoch, where Keras leaves a PyDataset's enqueuer
    running: with ``workers=2`` a baseline used to leave 72 threads (and their queued batches)
    in the user's process. The advisor stops the enqueuers its segments made."""
    import time

    x, y = arrays(128)

    class Workers(keras.utils.PyDataset):
        """An epoch of 100 batches that wait 20 ms each (~1 s with two workers): far longer than a
        0.4 s segment, so every segment stops inside an epoch."""

        def __len__(self) -> int:
            return 100

        def __getitem__(self, i: int):
            time.sleep(0.02)
            j = i % 4
            return x[j * 32 : (j + 1) * 32], y[j * 32 : (j + 1) * 32]

    cb = advisor.AdvisorCallback(tmp_path, **QUICK)
    model().fit(Workers(workers=2), epochs=1, verbose=0, callbacks=[cb])
    from advisor.store.reader import RunReader
    from advisor.store.schema import BaselineRecord

    (record,) = RunReader(cb.writer.path).read().of_type(BaselineRecord)
    assert record.cached_samples_per_s and record.real_samples_per_s  # both arms were measured
    assert not threads_left()
