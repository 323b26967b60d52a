"""The precision what-if: the model moved to another dtype policy keeps its pinned layers and its
weights; measured at each policy in fresh processes, every policy answers its rounds."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")


@pytest.fixture
def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy("float32")


def _model():
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1, dtype="float32"),  # pinned, as Keras advises for the output
        ]
    )
    model.compile("adam", "mse")
    return model


def test_a_model_moves_to_another_policy_with_its_pinned_layers_and_weights(mixed_float16):
    from advisor.experiments.precision.policy import layers_policy, with_policy

    model = _model()
    assert layers_policy(model) == "mixed_float16"
    moved = with_policy(model, "mixed_bfloat16", keras)
    assert [layer.dtype_policy.name for layer in moved.layers] == ["mixed_bfloat16", "float32"]
    for a, b in zip(model.get_weights(), moved.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert type(moved.optimizer).__name__ != "LossScaleOptimizer"
    back = with_policy(moved, "mixed_float16", keras)
    assert type(back.optimizer).__name__ == "LossScaleOptimizer"  # Keras's loss scaling, as in fit


@pytest.mark.slow
@pytest.mark.long
def test_each_policy_is_measured_in_a_fresh_process(mixed_float16):
    from advisor.experiments.precision import POLICIES, measure_precision

    model = _model()
    x = np.random.default_rng(0).normal(size=(512, 16)).astype("float32")
    result = measure_precision(model, (x, x[:, :1]), batch_size=32, seconds=0.6, rounds=3)
    assert result.own == "mixed_float16"
    assert list(result.policies) == ["mixed_float16", "float32", "mixed_bfloat16"]
    for policy in POLICIES:
        entry = result.policies[policy]
        assert entry.status == "measured", (policy, entry.reason)
        assert len(entry.rounds) == 3 and min(entry.rounds) > 0
    values = result.values()
    assert values["precision.own"] == "mixed_float16"
    assert len(values["precision.policies"]) == 3
