"""Model families for the backend what-if, as users write them: each one's own classes.

    python examples/backend_families.py FAMILY[=CANDIDATES] ... [--seconds S] [--rounds N] ...

- ``resnet``: a small ResNet whose residual block is a custom layer (two convolutions, batch
  normalisation, the shortcut added back);
- ``transformer``: a Transformer encoder whose multi-head self-attention is a custom layer
  written with ``keras.ops`` only;
- ``tape_step``: a subclassed ``keras.Model`` with its own ``train_step`` written for TensorFlow
  (``tf.GradientTape``, as Keras's "Customizing what happens in fit" guide for TensorFlow does):
  it trains on TensorFlow only;
- ``loss_step``: the same model made backend-neutral the way Keras documents for every backend:
  ``compute_loss`` overridden (a penalty added with ``keras.ops``) instead of ``train_step``;
- ``loss_metric``: a plain model compiled with a custom loss and a custom metric (state
  variables, ``keras.ops``);
- ``notebook``: the custom layer of ``NOTEBOOK_LAYER``, which
  ``tests/experiments/test_backends_notebook.py`` runs in a real Jupyter kernel
  (``notebook_cells``: the cell defines it and calls the what-if).

Run as a script, the classes are the script's own (``__main__``): they travel to the candidates'
processes by value, as a user's would. The script measures the family with
``measure_backends`` (every candidate, or those named: ``resnet=tensorflow,jax+jit``) and
prints one line ``@result {...}`` per family (the result's JSON, and whether the model's weights
were left unchanged). ``benchmarks/backends.py`` imports this module instead
(the candidates then import it by reference). Each family trains in seconds on a CPU.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402

ROWS, BATCH, WIDTH = 2048, 32, 512  # WIDTH: the dense families' steps take a few ms, as real ones


class ResidualBlock(keras.layers.Layer):
    """conv-bn-relu-conv-bn, plus the input (projected when the width changes), then relu."""

    def __init__(self, filters: int, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.filters = filters
        self.conv1 = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn1 = keras.layers.BatchNormalization()
        self.conv2 = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn2 = keras.layers.BatchNormalization()
        self.project = None

    def build(self, shape):  # type: ignore[no-untyped-def]
        if shape[-1] != self.filters:
            self.project = keras.layers.Conv2D(self.filters, 1, use_bias=False)
            self.project.build(shape)
        self.conv1.build(shape)
        inner = (*shape[:-1], self.filters)
        self.bn1.build(inner)
        self.conv2.build(inner)
        self.bn2.build(inner)

    def call(self, x, training=None):  # type: ignore[no-untyped-def]
        h = keras.ops.relu(self.bn1(self.conv1(x), training=training))
        h = self.bn2(self.conv2(h), training=training)
        shortcut = self.project(x) if self.project is not None else x
        return keras.ops.relu(h + shortcut)

    def get_config(self):  # type: ignore[no-untyped-def]
        return {**super().get_config(), "filters": self.filters}


class SelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention, in ``keras.ops`` only."""

    def __init__(self, heads: int, dim: int, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.heads, self.dim = heads, dim
        self.qkv = keras.layers.Dense(3 * dim)
        self.out = keras.layers.Dense(dim)

    def build(self, shape):  # type: ignore[no-untyped-def]
        self.qkv.build(shape)
        self.out.build((*shape[:-1], self.dim))

    def call(self, x):  # type: ignore[no-untyped-def]
        ops, heads = keras.ops, self.heads
        steps, depth = x.shape[1], self.dim // heads
        qkv = ops.reshape(self.qkv(x), (-1, steps, 3, heads, depth))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, batch, heads, steps, depth)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / ops.sqrt(float(depth))
        mixed = ops.matmul(ops.softmax(scores, axis=-1), v)
        mixed = ops.reshape(ops.transpose(mixed, (0, 2, 1, 3)), (-1, steps, self.dim))
        return self.out(mixed)

    def get_config(self):  # type: ignore[no-untyped-def]
        return {**super().get_config(), "heads": self.heads, "dim": self.dim}


class TapeModel(keras.Model):
    """A functional model with its own ``train_step``, written for TensorFlow."""

    def train_step(self, data):  # type: ignore[no-untyped-def]
        import tensorflow as tf

        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class PenaltyModel(keras.Model):
    """The backend-neutral way: ``compute_loss`` overridden, ``keras.ops`` only; Keras's own
    ``train_step`` (one per backend) differentiates it."""

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):  # type: ignore[no-untyped-def]
        loss = super().compute_loss(x, y, y_pred, sample_weight, training)
        return loss + 1e-3 * keras.ops.mean(keras.ops.square(y_pred))


class ScaledHuber(keras.losses.Loss):
    """Huber loss with its own ``delta``, in ``keras.ops``."""

    def __init__(self, delta: float = 1.0, name: str = "scaled_huber", **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(name=name, **kwargs)
        self.delta = delta

    def call(self, y_true, y_pred):  # type: ignore[no-untyped-def]
        error = keras.ops.abs(keras.ops.cast(y_true, y_pred.dtype) - y_pred)
        quadratic = keras.ops.minimum(error, self.delta)
        return keras.ops.mean(0.5 * quadratic**2 + self.delta * (error - quadratic), axis=-1)

    def get_config(self):  # type: ignore[no-untyped-def]
        return {**super().get_config(), "delta": self.delta}


class MeanAbsoluteError(keras.metrics.Metric):
    """A metric with its own state variables."""

    def __init__(self, name: str = "mean_abs", **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):  # type: ignore[no-untyped-def]
        error = keras.ops.abs(keras.ops.cast(y_true, y_pred.dtype) - y_pred)
        self.total.assign_add(keras.ops.cast(keras.ops.sum(error), "float32"))
        self.count.assign_add(keras.ops.cast(keras.ops.size(error), "float32"))

    def result(self):  # type: ignore[no-untyped-def]
        return self.total / keras.ops.maximum(self.count, 1.0)

    def reset_state(self):  # type: ignore[no-untyped-def]
        self.total.assign(0.0)
        self.count.assign(0.0)


# The notebook's custom layer (defined in a cell, see notebook_cells); here too for the benchmark.
NOTEBOOK_LAYER = '''
class GatedDense(keras.layers.Layer):
    """A gated linear unit: Dense(x) * sigmoid(Dense(x)), in keras.ops."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.value = keras.layers.Dense(units)
        self.gate = keras.layers.Dense(units)

    def call(self, x):
        return self.value(x) * keras.ops.sigmoid(self.gate(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def notebook_model():
    model = keras.Sequential(
        [keras.Input((32,)), GatedDense(256), GatedDense(256), keras.layers.Dense(1)]
    )
    model.compile(optimizer="adam", loss="mse")
    return model
'''
exec(NOTEBOOK_LAYER)  # noqa: S102 — the notebook's cell, defined here too for the benchmark

# The notebook: a first cell of imports, then one that defines the layer and calls the what-if.
NOTEBOOK_SETUP = """
import json, os
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras
import numpy as np
import advisor
"""
NOTEBOOK_CALL = """
model = notebook_model()
rng = np.random.default_rng(0)
x, y = rng.random((1024, 32), dtype=np.float32), rng.random((1024, 1), dtype=np.float32)
model.fit(x, y, batch_size=32, epochs=1, verbose=0)
result = advisor.whatif(
    model, (x, y), candidates=["backends"], batch_size=32, backends_max_seconds=ALLOWANCE
)
print(result.backends.render())
print("@result " + json.dumps(result.backends.to_dict()))
"""


def notebook_cells(allowance: float = 300.0) -> list[str]:
    """The notebook's code cells; the second defines the custom layer and calls the what-if."""
    call = NOTEBOOK_CALL.replace("ALLOWANCE", repr(float(allowance)))
    return [NOTEBOOK_SETUP.strip(), (NOTEBOOK_LAYER + call).strip()]


def _arrays(shape: tuple[int, ...], classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.random((ROWS, *shape), dtype=np.float32)
    if classes is None:
        return x, rng.random((ROWS, 1), dtype=np.float32)
    return x, rng.integers(0, classes, ROWS)


def resnet():  # type: ignore[no-untyped-def]
    inputs = keras.Input((16, 16, 3))
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    h = ResidualBlock(16)(h)
    h = keras.layers.MaxPooling2D()(h)
    h = ResidualBlock(32)(h)
    outputs = keras.layers.Dense(10)(keras.layers.GlobalAveragePooling2D()(h))
    model = keras.Model(inputs, outputs)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, *_arrays((16, 16, 3), classes=10)


def transformer():  # type: ignore[no-untyped-def]
    steps, dim = 16, 32
    inputs = keras.Input((steps,), dtype="int32")
    h = keras.layers.Embedding(100, dim)(inputs)
    h = keras.layers.LayerNormalization()(h + SelfAttention(4, dim)(h))
    feed = keras.layers.Dense(dim)(keras.layers.Dense(2 * dim, activation="relu")(h))
    h = keras.layers.LayerNormalization()(h + feed)
    outputs = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(h))
    model = keras.Model(inputs, outputs)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    return model, rng.integers(0, 100, (ROWS, steps)).astype("int32"), rng.integers(0, 2, ROWS)


def _subclassed(cls):  # type: ignore[no-untyped-def]
    inputs = keras.Input((32,))
    h = keras.layers.Dense(WIDTH, activation="relu")(inputs)
    model = cls(inputs, keras.layers.Dense(1)(keras.layers.Dense(WIDTH, activation="relu")(h)))
    model.compile("adam", "mse", metrics=["mae"])
    return model, *_arrays((32,))


def tape_step():  # type: ignore[no-untyped-def]
    return _subclassed(TapeModel)


def loss_step():  # type: ignore[no-untyped-def]
    return _subclassed(PenaltyModel)


def loss_metric():  # type: ignore[no-untyped-def]
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", ScaledHuber(0.5), metrics=[MeanAbsoluteError()])
    return model, *_arrays((32,))


def notebook():  # type: ignore[no-untyped-def]
    return notebook_model(), *_arrays((32,))  # noqa: F821 — defined by NOTEBOOK_LAYER


FAMILIES = {
    "resnet": resnet,
    "transformer": transformer,
    "tape_step": tape_step,
    "loss_step": loss_step,
    "loss_metric": loss_metric,
    "notebook": notebook,
}


def measure(family: str, candidates: list[str] | None, args) -> dict:  # type: ignore[no-untyped-def]
    """One family's backend what-if: the result's JSON, and whether the weights were left alone."""
    from advisor.experiments.backends import measure_backends

    model, x, y = FAMILIES[family]()
    model.fit(x, y, batch_size=BATCH, epochs=1, steps_per_epoch=4, verbose=0)
    before = [w.copy() for w in model.get_weights()]
    result = measure_backends(
        model,
        (x, y),
        candidates,
        batch_size=BATCH,
        seconds=args.seconds,
        rounds=args.rounds,
        warmup=args.warmup,
        sample=args.sample,
        max_seconds=args.max_seconds,
        torch_threads=1,
    )
    unchanged = all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    return dict(result.to_dict(), family=family, unchanged=unchanged)


def main() -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "families", nargs="+", help="FAMILY or FAMILY=CANDIDATES (e.g. resnet=tensorflow,jax+jit)"
    )
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=0.2)
    parser.add_argument("--sample", type=int, default=8)
    parser.add_argument("--max-seconds", type=float, default=240.0)
    args = parser.parse_args()
    for spec in args.families:
        family, _, names = spec.partition("=")
        if family not in FAMILIES:
            parser.error(f"unknown family {family!r}: one of {', '.join(FAMILIES)}")
        found = measure(family, names.split(",") if names else None, args)
        print("@result " + json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
