"""The portability table, read from real Keras classes' source: each blocking call with its class,
line, the backends it blocks and its keras.ops replacement; and the portable rewrite, whose
replaced layer computes what the original did."""

from __future__ import annotations

import importlib.util
import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from advisor.errors import UsageError  # noqa: E402
from advisor.experiments.backends import portable  # noqa: E402
from advisor.probes.portability import scan_live, scan_source  # noqa: E402


class TfDense(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.seen = []

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], self.units))

    def call(self, x):
        print("traced")
        self.seen.append(x)
        h = tf.nn.relu(tf.matmul(x, self.w))
        return tf.cast(tf.reduce_mean(h, axis=-1, keepdims=True), tf.float32)


class PyCall(keras.layers.Layer):
    def call(self, x):
        return tf.py_function(lambda v: v.numpy(), [x], tf.float32)


class TapeModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {"loss": loss}


def _line(cls: type, text: str) -> int:
    """The file line of the first line of ``cls``'s source that holds ``text``."""
    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _by_call(scanned) -> dict:
    return {b.call: b for b in scanned.blockers}


def test_the_table_names_the_layer_the_call_its_line_and_its_replacement() -> None:
    scanned = scan_live(TfDense)
    assert scanned.name == "TfDense" and scanned.kind == "layer"
    assert Path(scanned.file).name == "test_portability.py"
    calls = _by_call(scanned)
    relu = calls["tf.nn.relu"]
    assert relu.owner == "TfDense" and relu.method == "call"
    assert relu.line == _line(TfDense, "tf.nn.relu")
    assert relu.blocks == ("jax", "torch") and relu.replacement == "keras.ops.relu"
    assert calls["tf.matmul"].replacement == "keras.ops.matmul"
    assert calls["tf.reduce_mean"].replacement == "keras.ops.mean"
    assert calls["tf.cast"].replacement == "keras.ops.cast"
    assert calls["tf.float32"].replacement == "'float32'"
    # Python side effects in call: noted, blocking nothing
    assert calls["print"].kind == "side_effect" and calls["print"].blocks == ()
    assert calls["self.seen.append()"].kind == "side_effect"
    assert {b: scanned.status(b) for b in ("tensorflow", "jax", "torch")} == {
        "tensorflow": "runs",
        "jax": "blocked",
        "torch": "blocked",
    }


def test_a_call_without_replacement_and_a_train_step_for_one_backend() -> None:
    calls = _by_call(scan_live(PyCall))
    assert calls["tf.py_function"].replacement is None
    assert "keras.ops" in calls["tf.py_function"].advice
    assert calls[".numpy()"].blocks == ("tensorflow", "jax", "torch")  # fails while traced
    tape = scan_live(TapeModel)
    assert tape.kind == "model"
    found = _by_call(tape)["tf.GradientTape"]
    assert found.kind == "train_step" and found.method == "train_step"
    assert found.blocks == ("jax", "torch") and found.replacement is None
    assert "train_step" in found.advice


def test_replacements_only_where_the_arguments_mean_the_same() -> None:
    source = textwrap.dedent(
        """
        import torch
        import jax.numpy as jnp
        import tensorflow as tf


        def loss(y, p):
            a = torch.cat([y, p], dim=1)
            b = tf.matmul(y, p, True)
            c = jnp.mean(y, 0, None)
            return torch.clamp(a, min=0.0) + b + c
        """
    )
    (scanned,) = scan_source(source, "loss.py", ["loss"])
    calls = _by_call(scanned)
    assert calls["torch.cat"].replacement == "keras.ops.concatenate"
    assert calls["torch.cat"].blocks == ("tensorflow", "jax")
    assert "axis" in portable.apply_edits(source, list(calls["torch.cat"].edits))
    assert calls["tf.matmul"].replacement is None  # transpose_a: keras.ops.matmul has none
    assert calls["jnp.mean"].replacement is None  # numpy's third positional is dtype
    assert calls["torch.clamp"].replacement == "keras.ops.clip"
    clip = portable.apply_edits(source, list(calls["torch.clamp"].edits))
    assert "keras.ops.clip(a, x_min=0.0)" in clip


MODULE = textwrap.dedent(
    """
    import keras
    import tensorflow as tf


    class Scaled(keras.layers.Layer):
        def call(self, x):
            h = tf.nn.softmax(tf.concat([x, 2.0 * x], axis=-1))
            return tf.reduce_sum(tf.transpose(h, perm=[1, 0]), axis=0)
    """
)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_portable_rewrite_computes_what_the_original_did(tmp_path) -> None:
    path = tmp_path / "scaled_layers.py"
    path.write_text(MODULE)
    table = portable.Table(scan_source(MODULE, str(path), ["Scaled"]), {"scaled_layers": path})
    ported = portable.port(table, tmp_path / "ported")
    assert ported.replaced == 4
    assert "-        h = tf.nn.softmax(tf.concat([x, 2.0 * x], axis=-1))" in ported.diff
    assert "+        h = keras.ops.softmax(keras.ops.concatenate([x, 2.0 * x], axis=-1))" in (
        ported.diff
    )
    assert "keras.ops.transpose(h, axes=[1, 0])" in ported.diff
    assert "-import tensorflow as tf" in ported.diff  # no tf. left: the import goes too
    rewritten = ported.files["scaled_layers"].read_text()
    assert not scan_source(rewritten, "ported.py", ["Scaled"])[0].blockers
    x = np.random.default_rng(0).random((4, 3), dtype=np.float32)
    original = _load("scaled_layers_original", path).Scaled()(x)
    replaced = _load("scaled_layers_ported", ported.files["scaled_layers"]).Scaled()(x)
    np.testing.assert_allclose(np.asarray(original), np.asarray(replaced), rtol=1e-6)


def test_port_names_the_blocker_that_has_no_replacement(tmp_path) -> None:
    source = inspect.getsource(PyCall)
    header = "import keras\nimport tensorflow as tf\n\n\n"
    path = tmp_path / "pycall.py"
    path.write_text(header + source)
    table = portable.Table(scan_source(header + source, str(path), ["PyCall"]), {"pycall": path})
    with pytest.raises(
        UsageError,
        match=r"no keras.ops replacement for PyCall calls tf.py_function \(pycall.py:7\)",
    ):  # noqa: E501
        portable.port(table, tmp_path / "ported")
