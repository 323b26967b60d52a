"""The backend what-if on a model built from the user's own classes: a script's custom layer
(no get_config, an ``__init__`` without ``**kwargs``, a ``call`` using ``tf.nn.relu``), a custom
loss and metric, a subclassed model — they travel to the candidates' fresh processes by value.
Each measurement starts real candidate processes: kept to TensorFlow (+ JAX with jit), short."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("cloudpickle")

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import keras
    import numpy as np
    import tensorflow as tf

    from advisor.experiments.backends import measure_backends


    class ReluDense(keras.layers.Layer):  # no get_config; __init__ takes no **kwargs
        def __init__(self, units):
            super().__init__()
            self.units = units

        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], self.units), initializer="glorot_uniform")

        def call(self, x):
            return tf.nn.relu(tf.matmul(x, self.w))


    def squared(y, p):
        return keras.ops.mean(keras.ops.square(y - p), axis=-1)


    class MeanAbs(keras.metrics.Mean):
        def update_state(self, y, p, sample_weight=None):
            return super().update_state(keras.ops.abs(y - p))


    class Tower(keras.Model):  # subclassed, without get_config
        def __init__(self, width):
            super().__init__()
            self.hidden = keras.layers.Dense(width, activation="relu")
            self.out = keras.layers.Dense(1)

        def call(self, x):
            return self.out(self.hidden(x))


    class Stubborn(keras.layers.Layer):  # saves, but its config rebuilds it nowhere
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(units)

        def call(self, x):
            return self.dense(x)

        def get_config(self):
            return {**super().get_config(), "units": 4, "colour": "blue"}


    LOCK = threading.Lock()


    class Locked(keras.layers.Layer):  # its code refers to a lock: it cannot be pickled
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.dense = keras.layers.Dense(units)

        def call(self, x):
            with LOCK:
                return self.dense(x)

        def get_config(self):
            return {**super().get_config(), "units": self.units}


    def helpers():  # a layer class and a loss made inside a function
        class Scale(keras.layers.Layer):
            def __init__(self, factor, **kwargs):
                super().__init__(**kwargs)
                self.factor = factor

            def call(self, x):
                return x * self.factor

            def get_config(self):
                return {**super().get_config(), "factor": self.factor}

        def weighted(y, p):
            return 2.0 * keras.ops.mean(keras.ops.square(y - p), axis=-1)

        return Scale, weighted


    kind, candidates = sys.argv[1], sys.argv[2].split(",")
    rng = np.random.default_rng(0)
    x = rng.random((256, 16), dtype=np.float32)
    y = rng.random((256, 1), dtype=np.float32)
    if kind in ("layer", "port"):
        model = keras.Sequential([keras.Input((16,)), ReluDense(32), keras.layers.Dense(1)])
        model.compile("adam", squared, metrics=[MeanAbs(name="mean_abs")])
    elif kind == "stubborn":
        model = keras.Sequential([keras.Input((16,)), Stubborn(8), keras.layers.Dense(1)])
        model.compile("adam", "mse")
    elif kind == "local":
        Scale, weighted = helpers()
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8), Scale(0.5)])
        model.compile("adam", weighted)
    elif kind == "lock":
        model = keras.Sequential([keras.Input((16,)), Locked(8), keras.layers.Dense(1)])
        model.compile("adam", "mse")
    else:
        model = Tower(32)
        model.compile("adam", "mse")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    before = [w.copy() for w in model.get_weights()]
    result = measure_backends(
        model, (x, y), candidates, batch_size=32, seconds=0.9, rounds=3, warmup=0.2,
        port=kind == "port",
    )
    unchanged = all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    print("@result " + json.dumps(dict(result.to_dict(), unchanged=unchanged)))
    """
)


def _run(tmp_path: Path, kind: str, candidates: str) -> dict:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), kind, candidates],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@result ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("@result ") :])


def _rows(result: dict) -> dict[str, dict]:
    return {row["candidate"]: row for row in result["candidates"]}


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_a_scripts_custom_layer_loss_and_metric_travel_to_the_candidates(tmp_path) -> None:
    result = _run(tmp_path, "layer", "tensorflow,jax+jit")
    rows = _rows(result)
    own = rows["tensorflow"]
    assert own["status"] == "measured", own["reason"]
    assert len(own["rounds"]) == 3 and own["band"] is not None
    assert result["unchanged"]  # the user's model is not trained by the what-if
    # the portability table, read before measuring: the layer, its call, its line, the fix
    table = {row["class"]: row for row in result["portability"]}
    relu = next(b for b in table["ReluDense"]["blockers"] if b["call"] == "tf.nn.relu")
    line = next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if "tf.nn.relu" in text)
    assert Path(relu["file"]).name == "train.py" and relu["line"] == line
    assert relu["blocks"] == ["jax", "torch"] and relu["replacement"] == "keras.ops.relu"
    assert table["MeanAbs"]["backends"] == dict.fromkeys(("tensorflow", "jax", "torch"), "runs")
    assert table["squared"]["kind"] == "function" and not table["squared"]["blockers"]
    jax = rows["jax+jit"]
    if jax["status"] == "measured":
        assert jax["speedup"] is not None and jax["speedup_band"] is not None
    else:  # tf.nn.relu on a JAX tracer: the reason names it, whole
        assert jax["status"] in ("failed", "not_installed")
        reason = jax["reason"]
        assert not reason.endswith("…") and "could not be deserialized" not in reason
        # names the user's layer, or the line of the script that raised it
        assert jax["status"] == "not_installed" or "train.py" in reason or "ReluDense" in reason, (
            reason
        )


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_a_subclassed_model_without_get_config_is_measured_on_its_own_backend(tmp_path) -> None:
    result = _run(tmp_path, "model", "tensorflow")
    rows = _rows(result)
    own = rows["tensorflow"]
    assert own["status"] == "measured", own["reason"]
    assert len(own["rounds"]) == 3 and own["band"] is not None
    assert "in this process" in result["note"]  # Keras kept no constructor arguments to rebuild
    assert result["unchanged"]  # its weights put back after
    xla = rows["tensorflow+jit"]  # TensorFlow's other mode is measured beside it
    assert xla["status"] == "measured" or xla["reason"], xla


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_a_model_its_own_backend_cannot_rebuild_is_measured_in_process(tmp_path) -> None:
    result = _run(tmp_path, "stubborn", "tensorflow,jax+jit")
    rows = _rows(result)
    assert rows["tensorflow"]["status"] == "measured", rows["tensorflow"]["reason"]
    assert rows["tensorflow"]["band"] is not None and result["unchanged"]
    assert "tensorflow in a fresh process: cannot rebuild the model" in result["note"]
    assert "colour" in result["note"]  # the reason is Keras's own, whole
    assert rows["jax+jit"]["status"] in ("failed", "not_installed") and rows["jax+jit"]["reason"]


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_the_portable_variant_of_a_scripts_layer_trains_on_jax(tmp_path) -> None:
    pytest.importorskip("jax")
    result = _run(tmp_path, "port", "jax+jit")
    rows = _rows(result)
    assert rows["jax+jit"]["status"] == "measured", rows["jax+jit"]["reason"]
    assert rows["tensorflow"]["status"] == "measured", rows["tensorflow"]["reason"]
    assert result["ported"] == 2 and result["unchanged"]
    assert "+        return keras.ops.relu(keras.ops.matmul(x, self.w))" in result["diff"]
    assert "-import tensorflow as tf" in result["diff"]  # no tf. left in the script
    assert (tmp_path / "train.py").read_text() == SCRIPT  # the script itself is not rewritten


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_a_class_and_a_loss_made_inside_a_function_travel_by_value(tmp_path) -> None:
    result = _run(tmp_path, "local", "tensorflow,jax+jit")
    rows = _rows(result)
    assert result["note"] is None  # rebuilt in fresh processes, not measured in this one
    assert rows["tensorflow"]["status"] == "measured", rows["tensorflow"]["reason"]
    assert rows["jax+jit"]["status"] in ("measured", "not_installed"), rows["jax+jit"]["reason"]


@pytest.mark.slow
@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_classes_that_cannot_be_pickled_give_every_candidate_the_reason(tmp_path) -> None:
    result = _run(tmp_path, "lock", "tensorflow,jax+jit")
    rows = _rows(result)
    assert rows["tensorflow"]["status"] == "measured" and result["unchanged"]  # in this process
    assert "in this process" in result["note"]
    jax = rows["jax+jit"]  # not started: it could not have found Locked
    assert jax["status"] in ("failed", "not_installed"), jax
    if jax["status"] == "failed":
        assert jax["reason"].startswith("the custom objects (Locked) cannot be pickled"), jax
        assert "_thread.lock" in jax["reason"], jax
