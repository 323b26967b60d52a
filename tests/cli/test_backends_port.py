"""``advisor backends MODEL``: the portability table before it measures, ``--port`` (the custom
layer's tf.* calls replaced by keras.ops: JAX then trains the model it could not before), and bad
input (a model file that cannot load, a blocker without replacement): one line, exit 2."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from advisor.cli.main import cli

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

MODULE = textwrap.dedent(
    """
    import keras
    import tensorflow as tf


    @keras.saving.register_keras_serializable(package="{name}")
    class ReluDense(keras.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], self.units), initializer="glorot_uniform")

        def call(self, x):
            return tf.nn.relu({inner})

        def get_config(self):
            return {{**super().get_config(), "units": self.units}}
    """
)
PORTABLE = "tf.matmul(x, self.w)"
STUCK = "tf.nn.gelu(tf.matmul(x, self.w))"  # exact: keras.ops.gelu is approximate


def _saved(tmp_path: Path, monkeypatch, name: str, inner: str) -> tuple[Path, Path]:
    """A module defining the layer (on the import path, as ``--import`` needs), a compiled model
    using it saved as ``.keras``, and an ``.npz`` of its data."""
    (tmp_path / f"{name}.py").write_text(MODULE.format(name=name, inner=inner))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    model = keras.Sequential([keras.Input((8,)), module.ReluDense(16), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    path, data = tmp_path / "model.keras", tmp_path / "xy.npz"
    model.save(path)
    rng = np.random.default_rng(0)
    np.savez(data, x=rng.random((128, 8), dtype=np.float32), y=rng.random((128, 1)))
    return path, data


def _backends(*args: str):
    return CliRunner().invoke(cli, ["backends", *args])


def test_a_model_file_that_cannot_load_is_one_line_and_exit_2(tmp_path) -> None:
    bad, data = tmp_path / "model.keras", tmp_path / "xy.npz"
    bad.write_text("not a zip")
    np.savez(data, x=np.zeros((64, 8)), y=np.zeros((64, 1)))
    result = _backends(str(bad), "--data", str(data), "--port")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "not a Keras model file (.keras)" in result.stderr


def test_port_names_the_call_that_has_no_replacement_before_measuring(
    tmp_path, monkeypatch
) -> None:
    model, data = _saved(tmp_path, monkeypatch, "stuck_layers", STUCK)
    result = _backends(str(model), "--data", str(data), "--import", "stuck_layers", "--port")
    assert result.exit_code == 2, result.output
    assert "ReluDense calls tf.nn.gelu (stuck_layers.py:16)" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    # the table came first: the layer, its line, what blocks it and what has a replacement
    assert "ReluDense (stuck_layers.py:" in result.stdout
    assert "tensorflow: runs  jax: blocked  torch: blocked" in result.stdout
    assert (
        "tf.nn.gelu blocks jax, torch; no keras.ops replacement (keras.ops.gelu(x, approximate="
        in result.stdout
    )
    assert "tf.nn.relu blocks jax, torch → replace with keras.ops.relu" in result.stdout
    assert "candidate" not in result.stdout  # nothing was measured


def _measure(model: Path, data: Path, *extra: str) -> dict:
    result = _backends(
        str(model), "--data", str(data), "--import", "relu_layers", "--candidates", "jax+jit",
        "--own", "tensorflow", "--seconds", "0.6", "--rounds", "3", "--format", "json", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
@pytest.mark.long
def test_port_makes_jax_train_the_model_it_could_not(tmp_path, monkeypatch) -> None:
    model, data = _saved(tmp_path, monkeypatch, "relu_layers", PORTABLE)
    before = _measure(model, data)
    (row,) = before["portability"]
    assert row["class"] == "ReluDense" and row["backends"]["jax"] == "blocked"
    relu = next(b for b in row["blockers"] if b["call"] == "tf.nn.relu")
    assert relu["replacement"] == "keras.ops.relu" and relu["line"] == 16
    jax = {c["candidate"]: c for c in before["candidates"]}["jax+jit"]
    if jax["status"] == "not_installed":
        pytest.skip("JAX is not installed")
    assert jax["status"] == "failed" and "relu_layers.py:16" in jax["reason"]

    after = _measure(model, data, "--port")
    assert after["ported"] == 2
    assert "+        return keras.ops.relu(keras.ops.matmul(x, self.w))" in after["diff"]
    rows = {c["candidate"]: c for c in after["candidates"]}
    assert rows["jax+jit"]["status"] == "measured", rows["jax+jit"]["reason"]
    assert rows["tensorflow"]["status"] == "measured", rows["tensorflow"]["reason"]
    assert (tmp_path / "relu_layers.py").read_text().count("tf.nn.relu") == 1  # yours untouched
