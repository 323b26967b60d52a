"""Cached-input baseline on real small fits: orderings, exact state restore, every input kind.

Functional tests measure briefly (``QUICK``: 0.6 s of measuring over 4 rounds); the tests of
measured verdicts use scenarios with wide margins (an input 60× slower than the step).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.analysis.registry import registry  # noqa: E402
from advisor.errors import UsageError  # noqa: E402
from advisor.experiments.baseline.engine import InputError, measure_input  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import BaselineRecord, EventRecord  # noqa: E402

FEATURES, CLASSES, BATCH = 16, 4, 16
# Per element: a batch waits ≈ 64 ms for its input, the step itself takes ≈ 1 ms — and still
# under 10 ms when a busy machine slows it tenfold (a sleep is not slowed).
SLEEP_S = 0.004
QUICK = {"seconds": 0.6, "rounds": 4}  # measure_input options where the figures are not the point
QUICK_CB = {"baseline_seconds": 0.6, "baseline_rounds": 4}


def build_model(steps_per_execution: int = 1) -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    return model


def arrays(n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, FEATURES)).astype("float32"), rng.integers(0, CLASSES, n).astype(
        "int64"
    )


def _sleepy(x, y):
    time.sleep(SLEEP_S)
    return x, y


def slow_dataset() -> tf.data.Dataset:
    def decode(x, y):
        xo, yo = tf.py_function(_sleepy, [x, y], [tf.float32, tf.int64])
        xo.set_shape([FEATURES])
        yo.set_shape([])
        return xo, yo

    return tf.data.Dataset.from_tensor_slices(arrays()).map(decode).batch(BATCH)


def fast_dataset() -> tf.data.Dataset:
    return (
        tf.data.Dataset.from_tensor_slices(arrays()).cache().batch(BATCH).prefetch(tf.data.AUTOTUNE)
    )


def snapshot(model: keras.Model) -> list[np.ndarray]:
    values = [np.array(v.numpy()) for v in model.variables]
    values += [np.array(v.numpy()) for v in model.optimizer.variables]
    values += [np.array(v.numpy()) for m in model.metrics for v in m.variables]
    return values


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b)
    )


@pytest.fixture(scope="module")
def trained() -> keras.Model:
    model = build_model()
    model.fit(*arrays(), batch_size=BATCH, epochs=1, verbose=0)
    return model


@pytest.fixture(scope="module")
def slow_and_fast(trained):
    before = snapshot(trained)
    history = trained.history
    slow = measure_input(trained, slow_dataset(), steps=10, seconds=1.5, source_cache=False)
    fast = measure_input(trained, fast_dataset(), steps=50, seconds=1.5)
    return before, history, slow, fast


def test_slow_pipeline_is_input_bound_and_cached_is_not(slow_and_fast) -> None:
    _, _, slow, fast = slow_and_fast
    assert slow.real_samples_per_s < slow.cached_samples_per_s
    assert slow.bound_fraction > 0.8
    # A 60× slower input: every round shows the cost, so it is far outside its noise band.
    assert slow.bound_outside_band is True and slow.bound_fraction - slow.bound_band > 0.5
    assert fast.bound_fraction < 0.5
    assert slow.bound_fraction > fast.bound_fraction
    # The slow pipeline alone is about as slow as training on it; the fast one outruns training.
    assert slow.data_only_samples_per_s < slow.cached_samples_per_s
    assert fast.data_only_ratio > slow.data_only_ratio
    # Time-boxed, interleaved, repeated: every arm measured in each of the 12 rounds, at least
    # the asked steps per arm.
    assert slow.rounds == 12 and slow.stopped is None
    rounds_per_arm = {arm: len(rates) for arm, rates in slow.round_rates.items()}
    assert rounds_per_arm == dict.fromkeys(("real", "cached", "data_only"), 12)
    assert (
        slow.steps >= 10
        and fast.steps >= 50
        and slow.batch_size == BATCH
        and slow.input_kind == "tf.data"
    )
    assert "input costs" in slow.summary() and " ± " in slow.summary()


def test_weights_and_optimizer_are_bit_identical(slow_and_fast, trained) -> None:
    before, history, _, _ = slow_and_fast
    assert same(before, snapshot(trained))
    assert trained.history is history
    assert int(trained.optimizer.iterations.numpy()) == 256 // BATCH


class Recorder(keras.callbacks.Callback):
    """Snapshots the model state in the hooks around the advisor's baseline."""

    def __init__(self) -> None:
        super().__init__()
        self.begin: list[np.ndarray] | None = None
        self.end: list[np.ndarray] | None = None

    def on_train_begin(self, logs=None) -> None:
        self.begin = snapshot(self.model)

    def on_train_end(self, logs=None) -> None:
        self.end = snapshot(self.model)


def _facts(cb: advisor.AdvisorCallback):
    run = RunReader(cb.run_path).read()
    facts, errors = registry().derive(run)
    assert not [e for e in errors if "baseline" in e or "pipeline" in e], errors
    return run, facts


def test_callback_end_on_a_file_pipeline_measures_all_four(tmp_path, runs_dir) -> None:
    x, y = arrays(128)
    files = []
    for i in range(2):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for xi, yi in zip(x[i::2], y[i::2]):
                writer.write(
                    tf.io.serialize_tensor(tf.constant(np.append(xi, yi).astype("float32"))).numpy()
                )
        files.append(path)

    def parse(record):
        v = tf.io.parse_tensor(record, tf.float32)
        v.set_shape([FEATURES + 1])
        return v[:FEATURES], tf.cast(v[FEATURES], tf.int64)

    ds = tf.data.TFRecordDataset(files).map(parse).batch(BATCH)
    model = build_model()
    before, after = Recorder(), Recorder()
    cb = advisor.AdvisorCallback(
        baseline="end", baseline_steps=6, log_every_seconds=None, **QUICK_CB
    )
    history = model.fit(ds, epochs=1, verbose=0, callbacks=[before, cb, after])
    assert history is model.history and len(history.history["loss"]) == 1
    assert same(before.end, snapshot(model))  # the baseline ran after `before` saw the final state
    run, facts = _facts(cb)
    record = run.of_type(BaselineRecord)[-1]
    assert record.error is None and record.mode == "end" and record.steps >= 6
    assert record.rounds == 4 and record.target_seconds == 0.6 and record.budget_seconds == 30.0
    assert 0 < record.measured_seconds <= record.seconds
    for name in ("real", "cached", "data_only", "source_cached"):
        assert getattr(record, f"{name}_samples_per_s") > 0, name
        assert len(getattr(record, f"{name}_rounds")) == 4, name
    for name in (
        "input.bound_fraction",
        "input.data_only_ratio",
        "input.source_cache_gain",
        "baseline.cached_samples_per_s",
        "input.wait_ms_per_step",
        "input.bound_band",
        "input.bound_outside_band",
        "input.source_cache_gain_band",
        "input.data_only_ratio_band",
    ):
        assert name in facts, name
    assert 0.0 <= facts["input.bound_fraction"] < 1.0
    assert facts["pipeline.file_source"] is True and facts["storage.files"] == 2


def _sleep_then(raw):
    time.sleep(SLEEP_S)  # a slow disk: each read waits
    return raw


def test_slow_reads_show_a_source_cache_gain(tmp_path, trained) -> None:
    x, y = arrays(96)
    paths = []
    for i in range(len(x)):
        path = tmp_path / f"sample-{i}.bin"
        np.append(x[i], y[i]).astype("float32").tofile(path)
        paths.append(str(path))

    def load(path):
        raw = tf.py_function(_sleep_then, [tf.io.read_file(path)], tf.string)
        values = tf.io.decode_raw(raw, tf.float32)
        values.set_shape([FEATURES + 1])
        return values[:FEATURES], tf.cast(values[FEATURES], tf.int64)

    ds = tf.data.Dataset.from_tensor_slices(paths).map(load).batch(BATCH)
    result = measure_input(trained, ds, steps=4, **QUICK)
    # Reads wait ≈ 64 ms per batch, the step takes ≈ 1 ms: caching after the source is far faster.
    assert result.source_cached_samples_per_s > 2 * result.real_samples_per_s
    assert result.source_cache_gain > 1.0


def test_callback_start_leaves_training_state_alone(runs_dir) -> None:
    model = build_model(steps_per_execution=2)
    model.fit(*arrays(64), batch_size=BATCH, epochs=1, verbose=0)  # optimizer state exists
    first, second = Recorder(), Recorder()
    cb = advisor.AdvisorCallback(
        baseline="start", baseline_steps=4, log_every_seconds=None, **QUICK_CB
    )
    model.fit(*arrays(), batch_size=BATCH, epochs=1, verbose=0, callbacks=[first, cb, second])
    assert same(first.begin, second.begin)  # the baseline ran in between, and left no trace
    run, _ = _facts(cb)
    record = run.of_type(BaselineRecord)[-1]
    assert record.mode == "start" and record.input_kind == "numpy"
    assert (
        record.real_samples_per_s and record.cached_samples_per_s and record.data_only_samples_per_s
    )
    assert record.source_cached_samples_per_s is None  # arrays have no file source
    assert int(model.optimizer.iterations.numpy()) == 64 // BATCH + 256 // BATCH


def test_generator_input_compares_with_training_throughput(runs_dir) -> None:
    x, y = arrays()

    def batches():
        for i in range(0, len(x), BATCH):
            yield x[i : i + BATCH], y[i : i + BATCH]

    model = build_model()
    cb = advisor.AdvisorCallback(
        baseline="end",
        baseline_steps=4,
        log_every_seconds=None,
        warmup_steps=2,
        window_seconds=0.05,
        **QUICK_CB,
    )
    model.fit(batches(), epochs=1, verbose=0, callbacks=[cb])
    run, facts = _facts(cb)
    record = run.of_type(BaselineRecord)[-1]
    assert record.input_kind == "generator" and record.real_samples_per_s is None
    assert record.cached_samples_per_s > 0 and record.data_only_samples_per_s is None
    # the real rate is training's own: 16 steps, 2 of warm-up, so measured windows always exist
    assert facts["throughput.samples_per_s"] > 0 and facts["baseline.real_source"] == "training"
    assert "input.bound_fraction" in facts


class Batches(keras.utils.PyDataset):
    def __init__(self) -> None:
        super().__init__()
        self.x, self.y = arrays(128)

    def __len__(self) -> int:
        return len(self.x) // BATCH

    def __getitem__(self, i: int):
        return self.x[i * BATCH : (i + 1) * BATCH], self.y[i * BATCH : (i + 1) * BATCH]


def test_pydataset_and_arrays_through_the_api(trained) -> None:
    before = snapshot(trained)
    result = measure_input(trained, Batches(), steps=4, **QUICK)
    assert (
        result.input_kind == "pydataset"
        and result.real_samples_per_s
        and result.data_only_samples_per_s
    )
    x, y = arrays()
    # steps=None: at least one epoch's worth (8 batches, less the warm-up step) per arm.
    result = measure_input(trained, (x, y), steps=None, batch_size=32, **QUICK)
    assert result.input_kind == "numpy" and result.steps >= 7 and result.batch_size == 32
    assert (
        result.real_samples_per_s and result.cached_samples_per_s and result.data_only_samples_per_s
    )
    assert same(before, snapshot(trained))


class Custom(keras.Model):
    """A subclassed model with a constructor argument Keras cannot serialize (so it cannot be
    cloned)."""

    def __init__(self, helper: object) -> None:
        super().__init__()
        self.helper = helper
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.out = keras.layers.Dense(CLASSES)

    def call(self, x):
        return self.out(self.hidden(x))


def test_unbuilt_subclassed_model() -> None:
    model = Custom(object())
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    result = measure_input(model, fast_dataset(), steps=4, **QUICK)
    assert result.cached_samples_per_s and result.real_samples_per_s
    assert model.built and int(model.optimizer.iterations.numpy()) == 0


# -- bad input ------------------------------------------------------------------------------------


def _corrupt(x):
    raise ValueError("corrupt record")


def _failing_map(x, y):
    out = tf.py_function(_corrupt, [x], tf.float32)
    out.set_shape(x.shape)
    return out, y


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: tf.data.Dataset.from_tensor_slices(arrays()).batch(BATCH).map(_failing_map),
            "the first batch of the input failed: ",
        ),
        (lambda: tf.data.Dataset.from_tensor_slices(arrays()).batch(BATCH).take(0), "empty"),
        (
            lambda: (
                tf.data.Dataset.from_tensor_slices(arrays()).batch(BATCH).filter(lambda x, y: False)
            ),
            "empty",
        ),
        (
            lambda: tf.data.TFRecordDataset(["/nonexistent/dir/part-0.tfrecord"]).batch(2),
            "/nonexistent/dir/part-0.tfrecord",
        ),
    ],
)
def test_bad_datasets_raise_one_line_errors(trained, make, message) -> None:
    before = snapshot(trained)
    with pytest.raises(InputError) as info:
        measure_input(trained, make(), steps=2, **QUICK)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert same(before, snapshot(trained))


def test_infinite_without_steps_and_bad_arguments(trained) -> None:
    infinite = tf.data.Dataset.from_tensor_slices(arrays()).batch(BATCH).repeat()
    with pytest.raises(InputError, match="infinite"):
        measure_input(trained, infinite, steps=None)
    with pytest.raises(InputError, match="not compiled"):
        measure_input(
            keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(1)]), fast_dataset()
        )
    with pytest.raises(InputError, match="steps must be a positive integer"):
        measure_input(trained, fast_dataset(), steps=0)
    with pytest.raises(UsageError, match="baseline must be"):
        advisor.AdvisorCallback(baseline="sometimes")


class StorageGoesAway(keras.callbacks.Callback):
    """Marks the data source broken once training is over (as if the files were deleted)."""

    broken = False

    def on_train_end(self, logs=None) -> None:
        StorageGoesAway.broken = True


def _read(x, y):
    if StorageGoesAway.broken:
        raise OSError("part-0.tfrecord: Input/output error")
    return x, y


def test_failing_baseline_is_an_event_and_training_goes_on(runs_dir) -> None:
    def read(x, y):
        xo, yo = tf.py_function(_read, [x, y], [tf.float32, tf.int64])
        xo.set_shape([None, FEATURES])
        yo.set_shape([None])
        return xo, yo

    ds = tf.data.Dataset.from_tensor_slices(arrays(64)).batch(BATCH).map(read)
    model = build_model()
    cb = advisor.AdvisorCallback(
        baseline="end", baseline_steps=2, log_every_seconds=None, **QUICK_CB
    )
    history = model.fit(ds, epochs=1, verbose=0, callbacks=[StorageGoesAway(), cb])
    assert len(history.history["loss"]) == 1
    run, facts = _facts(cb)
    record = run.of_type(BaselineRecord)[-1]
    assert record.error and "part-0.tfrecord: Input/output error" in record.error
    assert any(e.source == "baseline" and e.level == "warning" for e in run.of_type(EventRecord))
    assert facts["baseline.error"] == record.error
    assert "input.bound_fraction" not in facts
    assert run.status == "finished"


def test_torch_dataloader_input(trained) -> None:
    torch = pytest.importorskip("torch")
    x, y = arrays(128)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=BATCH
    )
    before = snapshot(trained)
    result = measure_input(trained, loader, steps=2, **QUICK)
    assert result.input_kind == "torch" and result.batch_size == BATCH
    assert (
        result.real_samples_per_s and result.cached_samples_per_s and result.data_only_samples_per_s
    )
    assert same(before, snapshot(trained))
