"""Training FLOPs per sample against analytic counts (2 FLOPs per multiply-add).

A trained layer costs its forward pass, the gradient of its weights (same multiply-adds) and,
except for the first layer, the gradient of its input (same again).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from advisor.probes.flops import estimate_flops_per_sample, input_specs


def _dense_model() -> tuple[Any, float]:
    import keras

    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    fwd = [2 * 64 * 128, 2 * 128 * 128, 2 * 128 * 10]
    return model, 2 * fwd[0] + 3 * fwd[1] + 3 * fwd[2]


def _conv_model() -> tuple[Any, float]:
    import keras

    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(
                16, 3, padding="same", activation="relu"
            ),  # 32×32×16 out, 3×3×3 kernel
            keras.layers.Conv2D(8, 3),  # "valid": 30×30×8 out, 3×3×16 kernel
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    conv1 = 2 * 32 * 32 * 16 * (3 * 3 * 3)
    conv2 = 2 * 30 * 30 * 8 * (3 * 3 * 16)
    dense = 2 * (30 * 30 * 8) * 10
    return model, 2 * conv1 + 3 * conv2 + 3 * dense


@pytest.mark.parametrize("build", [_dense_model, _conv_model], ids=["dense", "conv2d"])
def test_tf_graph_count_within_5_percent(build: Any) -> None:
    model, analytic = build()
    estimate = estimate_flops_per_sample(model, backend="tensorflow")
    assert estimate is not None and estimate.method == "tf-graph-op-count"
    assert estimate.flops_per_sample == pytest.approx(analytic, rel=0.05)
    assert estimate.by_op and sum(estimate.by_op.values()) == pytest.approx(
        estimate.flops_per_sample
    )


def test_attention_counts_einsum_and_batched_matmuls() -> None:
    import keras

    inputs = keras.Input((8, 16))
    attended = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(inputs, inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Flatten()(attended)))
    qkv, scores, mix, out_proj, head = (
        3 * 2 * 8 * 16 * 16,
        2 * 2 * 8 * 8 * 8,
        2 * 2 * 8 * 8 * 8,
        2 * 8 * 16 * 16,
        2 * 128,
    )
    # Q, K and V read the model input: no input gradient for them.
    analytic = 2 * qkv + 3 * (scores + mix + out_proj + head)
    estimate = estimate_flops_per_sample(model, backend="tensorflow")
    assert estimate is not None
    assert estimate.flops_per_sample == pytest.approx(analytic, rel=0.05)


def test_input_spec_from_the_dataset_when_the_model_has_no_inputs() -> None:
    import keras
    import tensorflow as tf

    class Mlp(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = keras.layers.Dense(32)
            self.out = keras.layers.Dense(1)

        def call(self, x: Any) -> Any:
            return self.out(self.hidden(x))

    model = Mlp()
    model(tf.zeros((1, 16)))
    ds = tf.data.Dataset.from_tensor_slices((tf.zeros((8, 16)), tf.zeros((8, 1)))).batch(4)
    data = SimpleNamespace(dataset=ds)
    assert input_specs(model, data) == ((16,), "float32")
    estimate = estimate_flops_per_sample(model, data, backend="tensorflow")
    assert estimate is not None
    assert estimate.flops_per_sample == pytest.approx(2 * (2 * 16 * 32) + 3 * (2 * 32), rel=0.05)


def test_unknown_backend_or_inputs_give_no_estimate() -> None:
    assert estimate_flops_per_sample(SimpleNamespace(inputs=None), None, backend="torch") is None
    assert input_specs(SimpleNamespace(), None) is None


JAX_SCRIPT = """
import os, json
os.environ["KERAS_BACKEND"] = "jax"
import keras
from advisor.probes.flops import estimate_flops_per_sample
dense = keras.Sequential(
    [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
)
conv = keras.Sequential([
    keras.Input((32, 32, 3)),
    keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
    keras.layers.Conv2D(8, 3),
    keras.layers.Flatten(),
    keras.layers.Dense(10),
])
out = {
    k: estimate_flops_per_sample(m, backend="jax") for k, m in (("dense", dense), ("conv", conv))
}
print(json.dumps({k: [v.flops_per_sample, v.method] for k, v in out.items()}))
"""


@pytest.mark.slow
def test_jax_jaxpr_count_within_5_percent() -> None:
    """In a subprocess: the Keras backend is fixed per process. Skipped where JAX is missing."""
    import importlib.util
    import json
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    proc = subprocess.run(
        [sys.executable, "-c", JAX_SCRIPT],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    dense = 2 * (2 * 64 * 128) + 3 * (2 * 128 * 10)
    conv1, conv2, fc = 2 * 32 * 32 * 16 * 27, 2 * 30 * 30 * 8 * 144, 2 * 7200 * 10
    assert result["dense"] == [pytest.approx(dense, rel=0.05), "jaxpr-op-count"]
    assert result["conv"] == [
        pytest.approx(2 * conv1 + 3 * (conv2 + fc), rel=0.05),
        "jaxpr-op-count",
    ]
