"""The baseline's cached batch has the structure training fed the model, for every input kind
``fit`` takes (NumPy and pandas arrays with and without ``y``, ``sample_weight``, dicts,
generators, PyDatasets, tf.data, torch DataLoaders) and every kind of model (its own
``train_step`` and ``test_step`` or Keras's, several outputs and losses): a ``train_step``
records the structure of each batch it is traced for, and the baseline's segments must trace it
for the same structure (a bare array stays bare, a tuple stays a tuple, a dict keeps its keys). A
model with its own ``train_step`` fed ``fit(x)`` without ``y`` used to receive ``(x,)`` from the
cached input and fail on a leading axis of 1. The model is a subclassed wrapper (it records what
its steps receive) around a Sequential or functional one; the baseline on Sequential models
themselves is test_baseline.py's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.slow

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import advisor  # noqa: E402
from advisor.store.reader import RunReader  # noqa: E402
from advisor.store.schema import BaselineRecord  # noqa: E402

ROWS, FEATURES, BATCH = 128, 8, 16
QUICK_CB = {"baseline_seconds": 0.4, "baseline_rounds": 3, "baseline_steps": 2}


class Structures:
    """What ``train_step`` (``seen``) and ``test_step`` (``tested``) were traced for: the batch's
    structure, each tensor by its rank."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.tested: list[Any] = []

    def record(self, data: Any, into: list[Any] | None = None) -> None:
        shape = tf.nest.map_structure(lambda t: len(t.shape), data)
        (self.seen if into is None else into).append(repr(shape))


class Probe(keras.Model):
    """A subclassed model around ``inner`` that records its batches' structure; ``own_step``:
    its own ``train_step`` (an autoencoder's, as a VAE's: the loss compares the output with
    the batch itself); else Keras's."""

    def __init__(self, inner: keras.Model, structures: Structures, own_step: bool) -> None:
        super().__init__()
        self.inner, self.structures, self.own_step = inner, structures, own_step

    def call(self, inputs: Any, training: bool = False) -> Any:
        return self.inner(inputs, training=training)

    def train_step(self, data: Any) -> Any:
        self.structures.record(data)
        if not self.own_step:
            return super().train_step(data)
        x = data[0] if isinstance(data, tuple) else data  # a generator's (x,)
        with tf.GradientTape() as tape:
            out = self(x, training=True)
            # as a VAE's reconstruction loss: shapes must match, no broadcasting over (1, ...)
            tf.debugging.assert_equal(tf.shape(out), tf.shape(x))
            loss = tf.reduce_mean(tf.square(out - x))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}

    def test_step(self, data: Any) -> Any:
        self.structures.record(data, self.structures.tested)
        if not self.own_step:
            return super().test_step(data)
        x = data[0] if isinstance(data, tuple) else data
        out = self(x, training=False)
        tf.debugging.assert_equal(tf.shape(out), tf.shape(x))
        return {"loss": tf.reduce_mean(tf.square(out - x))}


def _dense(out: int = FEATURES) -> keras.Model:
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(out)])


def _two_inputs() -> keras.Model:
    a, b = keras.Input((FEATURES,), name="a"), keras.Input((FEATURES,), name="b")
    out = keras.layers.Dense(1)(keras.layers.Concatenate()([a, b]))
    return keras.Model({"a": a, "b": b}, out)


def _two_outputs() -> keras.Model:
    x = keras.Input((FEATURES,))
    h = keras.layers.Dense(8, activation="relu")(x)
    return keras.Model(x, {"value": keras.layers.Dense(1)(h), "label": keras.layers.Dense(3)(h)})


RNG = np.random.default_rng(0)
X = RNG.normal(size=(ROWS, FEATURES)).astype("float32")
Y = RNG.normal(size=(ROWS, 1)).astype("float32")
SW = RNG.uniform(0.5, 1.5, size=(ROWS,)).astype("float32")


class XOnly(keras.utils.PyDataset):
    def __init__(self, with_y: bool) -> None:
        super().__init__()
        self.with_y = with_y

    def __len__(self) -> int:
        return ROWS // BATCH

    def __getitem__(self, i: int) -> Any:
        rows = slice(i * BATCH, (i + 1) * BATCH)
        return (X[rows], Y[rows]) if self.with_y else X[rows]


def _generator() -> Any:
    for _ in range(4):
        for i in range(0, ROWS, BATCH):
            yield (X[i : i + BATCH],)  # Keras takes tuples only from generators


def _pandas() -> Any:
    return pytest.importorskip("pandas")


def _torch_loader() -> Any:
    torch = pytest.importorskip("torch")
    pairs = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
    return torch.utils.data.DataLoader(pairs, batch_size=BATCH)


# name → (inner model, own train_step, loss, fit kwargs)
CASES: dict[str, Any] = {
    "numpy x without y, own train_step": (_dense, True, None, lambda: {"x": X}),
    "numpy x, y": (lambda: _dense(1), False, "mse", lambda: {"x": X, "y": Y}),
    "numpy x without y, own train_step and test_step, validation": (
        _dense,
        True,
        None,
        lambda: {"x": X, "validation_data": X[:32]},
    ),
    "pandas DataFrame x, Series y": (
        lambda: _dense(1),
        False,
        "mse",
        lambda: {"x": _pandas().DataFrame(X), "y": _pandas().Series(Y[:, 0])},
    ),
    "pandas DataFrame x without y, own train_step": (
        _dense,
        True,
        None,
        lambda: {"x": _pandas().DataFrame(X)},
    ),
    "numpy x, y, sample_weight": (
        lambda: _dense(1),
        False,
        "mse",
        lambda: {"x": X, "y": Y, "sample_weight": SW},
    ),
    "numpy dict of inputs": (_two_inputs, False, "mse", lambda: {"x": {"a": X, "b": X}, "y": Y}),
    "numpy two outputs, two losses": (
        _two_outputs,
        False,
        {"value": "mse", "label": "sparse_categorical_crossentropy"},
        lambda: {"x": X, "y": {"value": Y, "label": (Y > 0).astype("int64")}},
    ),
    "generator of x, own train_step": (_dense, True, None, lambda: {"x": _generator()}),
    "PyDataset of x, own train_step": (_dense, True, None, lambda: {"x": XOnly(False)}),
    "PyDataset of x, y": (lambda: _dense(1), False, "mse", lambda: {"x": XOnly(True)}),
    "tf.data of x, own train_step": (
        _dense,
        True,
        None,
        lambda: {"x": tf.data.Dataset.from_tensor_slices(X).batch(BATCH)},
    ),
    "torch DataLoader of x, y": (lambda: _dense(1), False, "mse", lambda: {"x": _torch_loader()}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_cached_batch_has_the_structure_training_fed(case: str, runs_dir) -> None:
    make_inner, own_step, loss, data = CASES[case]
    structures = Structures()
    model = Probe(make_inner(), structures, own_step)
    model.compile(optimizer="adam", loss=loss)
    cb = advisor.AdvisorCallback(baseline="end", log_every_seconds=None, **QUICK_CB)
    kwargs = data()
    arrays = isinstance(kwargs["x"], (np.ndarray, dict)) or hasattr(kwargs["x"], "iloc")
    fit_kwargs = {"batch_size": BATCH} if arrays else {}
    model.fit(**kwargs, **fit_kwargs, epochs=2, verbose=0, callbacks=[cb])
    record = RunReader(cb.run_path).read().of_type(BaselineRecord)[-1]
    assert record.error is None, record.error
    assert record.cached_samples_per_s and record.cached_samples_per_s > 0
    training = structures.seen[0]
    assert structures.seen[1:], "the baseline never traced the step: nothing was checked"
    assert set(structures.seen) == {training}, structures.seen
    if "validation_data" in kwargs:  # validation ran each epoch, always on its own structure
        assert len(structures.tested) >= 1 and len(set(structures.tested)) == 1
