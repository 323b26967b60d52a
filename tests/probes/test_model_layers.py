"""The model probe on real Keras models (no training): preprocessing and augmentation layers, and
custom objects that model.save and clone_model cannot rebuild — checked against Keras itself."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from advisor.diagnosis import evaluate, load_rules  # noqa: E402
from advisor.probes.model_layers import config_problem, read_model  # noqa: E402

RULES = {r.code: r for r in load_rules()}


class Lookup(keras.layers.Layer):
    """Takes an array and writes no get_config: Keras cannot write its config."""

    def __init__(self, table, **kwargs):
        super().__init__(**kwargs)
        self.table = np.asarray(table, dtype="float32")

    def call(self, x):
        return x * self.table


class Scale(keras.layers.Layer):
    """Plain-value arguments and no get_config: Keras 3 writes the config by itself."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor


class Shift(keras.layers.Layer):
    """A get_config that forgets an optional argument: a copy comes back at its default."""

    def __init__(self, units, offset=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.offset = units, offset

    def call(self, x):
        return x + self.offset

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class Complete(keras.layers.Layer):
    def __init__(self, units, offset=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.offset = units, offset

    def call(self, x):
        return x + self.offset

    def get_config(self):
        return {**super().get_config(), "units": self.units, "offset": self.offset}


class WeightedLoss(keras.losses.Loss):
    """Loss's own get_config knows name and reduction, not ``weight``: from_config fails."""

    def __init__(self, weight, **kwargs):
        super().__init__(**kwargs)
        self.weight = weight

    def call(self, y_true, y_pred):
        return keras.ops.mean(keras.ops.square(y_true - y_pred)) * self.weight


def _model(*layers):
    return keras.Sequential([keras.Input((4,)), *layers, keras.layers.Dense(1)])


def test_augmentation_and_preprocessing_inside_the_model_are_recognised():
    augment = keras.Sequential(
        [keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1)], name="augment"
    )
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Rescaling(1 / 255),
            augment,  # nested, as the Keras image examples write it
            keras.layers.Conv2D(4, 3),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(2),
        ]
    )
    model.compile("adam", "mse")
    values = read_model(model)
    assert values["model.preprocessing_layers"] == ["Rescaling", "RandomFlip", "RandomRotation"]
    assert values["model.augmentation_layers"] == ["RandomFlip", "RandomRotation"]
    assert values["model.custom_objects"] == [] and values["model.config_problems"] == []
    plain = read_model(_model(keras.layers.Dense(3)))
    assert plain["model.augmentation_layers"] == [] and plain["model.preprocessing_layers"] == []


def _clones(obj_or_model) -> bool:
    try:
        keras.models.clone_model(obj_or_model)
    except Exception:  # noqa: BLE001 — what Keras raises is the point
        return False
    return True


def test_custom_objects_are_judged_as_keras_rebuilds_them():
    model = _model(Lookup(np.ones(4)), Scale(), Shift(4), Complete(4))
    model.compile("adam", WeightedLoss(2.0), metrics=["mae"])
    values = read_model(model)
    assert values["model.custom_objects"] == [
        "Lookup (layer)",
        "Scale (layer)",
        "Shift (layer)",
        "Complete (layer)",
        "WeightedLoss (loss)",
    ]
    problems = values["model.config_problems"]
    assert len(problems) == 3
    assert problems[0].startswith("Lookup (layer): no get_config()") and "(table)" in problems[0]
    assert problems[1] == "Shift (layer): get_config() leaves out offset: a copy gets its default"
    assert problems[2] == (
        "WeightedLoss (loss): get_config() leaves out the required argument weight: "
        "from_config() fails"
    )
    # Keras agrees: what the probe names breaks cloning; what it passes clones.
    assert not _clones(_model(Lookup(np.ones(4))))
    assert _clones(_model(Scale())) and _clones(_model(Complete(4)))
    with pytest.raises(TypeError):
        WeightedLoss.from_config(WeightedLoss(2.0).get_config())
    assert Shift.from_config(Shift(4, offset=5.0).get_config()).offset == 1.0  # silently reset


def test_a_subclassed_model_without_get_config_is_named():
    class Tower(keras.Model):
        def __init__(self, width):
            super().__init__()
            self.dense = keras.layers.Dense(width)

        def call(self, x):
            return self.dense(x)

    tower = Tower(3)
    tower(np.ones((1, 4), "float32"))
    assert config_problem(tower) is not None
    assert read_model(tower)["model.config_problems"][0].startswith("Tower (model): ")
    assert not _clones(tower)


def test_p705_fails_and_passes_on_what_the_probe_reads():
    def facts(model):
        values = read_model(model)
        return {**values, "model.config_problem_count": len(values["model.config_problems"])}

    broken = evaluate(RULES["P750"], facts(_model(Lookup(np.ones(4)), Complete(4))))
    assert broken.status == "fail" and "Lookup (layer)" in broken.message
    assert "Complete" not in broken.message and "get_config()" in broken.fix
    fine = evaluate(RULES["P750"], facts(_model(Scale(), Complete(4))))
    assert fine.status == "pass" and "Scale (layer), Complete (layer)" in fine.message


def test_c403_does_not_advise_moving_augmentation_already_in_the_model():
    inside = read_model(_model(keras.layers.RandomFlip("horizontal")))
    assert evaluate(RULES["C403"], {**inside, "pipeline.random_maps": 0}).status == "n/a"
    assert evaluate(RULES["C403"], inside).status == "n/a"  # arrays: no pipeline maps at all
    on_cpu = evaluate(RULES["C403"], {**inside, "pipeline.maps": 2, "pipeline.random_maps": 1})
    assert on_cpu.status == "unknown" and "the model already holds RandomFlip" in on_cpu.message
    bare = read_model(_model(keras.layers.Dense(2)))
    assert evaluate(RULES["C403"], {**bare, "pipeline.maps": 2}).status == "unknown"


def test_g502_is_na_with_keras_reason_where_the_model_cannot_be_xla_compiled():
    from keras.src.trainers.trainer import model_supports_jit

    augmented = keras.Sequential(
        [keras.Input((16, 16, 3)), keras.layers.RandomRotation(0.1), keras.layers.Flatten()]
    )
    augmented.compile("adam", "mse")
    values = read_model(augmented)
    # the probe's verdict is Keras's own, and Keras turns jit_compile=True off for this model
    assert values["model.jit_supported"] is False is model_supports_jit(augmented)
    assert values["model.jit_unsupported_layers"] == ["RandomRotation"]
    with pytest.warns(UserWarning, match="jit_compile"):
        augmented.jit_compile = True
    assert augmented.jit_compile is False
    refused = evaluate(RULES["G502"], {**values, "context.jit_compile": False})
    assert refused.status == "n/a"
    assert "model_supports_jit says no" in refused.message and "RandomRotation" in refused.message

    plain = _model(keras.layers.Dense(3))
    plain.compile("adam", "mse")
    compilable = read_model(plain)
    assert (
        compilable["model.jit_supported"] is True and not compilable["model.jit_unsupported_layers"]
    )
    assert evaluate(RULES["G502"], {**compilable, "context.jit_compile": False}).status == "fail"
