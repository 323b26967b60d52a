"""What the diagnosis scenarios share: synthetic data, small models, and the fit with the advisor.

Every scenario trains with ``AdvisorCallback()`` and **no arguments** — the settings people
actually use — into the store named by ``$ADVISOR_RUNS_DIR`` (``./advisor-runs`` otherwise).
Each is decisive by design: its cause costs many times the threshold that detects it (an input
ten times slower than the step, a validation pass longer than the training), so that a busy
machine cannot flip the verdict. Fits train for a time, not a number of epochs (``SECONDS``, in
epochs of one to three seconds), so that they last long enough for the default baseline (it
skips fits shorter than about 10 s) on a fast machine and no longer than needed on a slow one.

    python examples/scenarios/<name>/train.py      # then: advisor check
    python benchmarks/diagnosis.py                 # every scenario, scored against expected.toml
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

FEATURES = 64
CLASSES = 10
# Training time of a scenario (epochs run until it has passed); the tests shorten it.
SECONDS = float(os.environ.get("ADVISOR_SCENARIO_SECONDS", "25"))


def arrays(n: int, features: int = FEATURES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic samples: float32 features and integer labels."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = rng.integers(0, CLASSES, size=(n,)).astype("int64")
    return x, y


def mlp(width: int = 256, depth: int = 2, features: int = FEATURES, **compile_kwargs: Any) -> Any:
    """A compiled multi-layer perceptron; ``compile_kwargs`` go to ``model.compile``."""
    import keras

    layers = [keras.Input((features,))]
    layers += [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
    layers.append(keras.layers.Dense(CLASSES))
    model = keras.Sequential(layers)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        **compile_kwargs,
    )
    return model


def sequences(n: int, steps: int = 20, features: int = 32, seed: int = 0) -> tuple[Any, Any]:
    """``n`` synthetic sequences of ``steps`` × ``features`` (float32) and integer labels."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, steps, features)).astype("float32")
    y = rng.integers(0, CLASSES, size=(n,)).astype("int64")
    return x, y


def lstm_classifier(steps: int = 20, features: int = 32, units: int = 64) -> Any:
    """A compiled small LSTM classifier under the global dtype policy, its output layer in
    float32 (as mixed-precision guides advise)."""
    import keras

    model = keras.Sequential(
        [
            keras.Input((steps, features)),
            keras.layers.LSTM(units),
            keras.layers.Dense(CLASSES, dtype="float32"),
        ]
    )
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def advisor_callback() -> Any:
    """The advisor with its defaults (the store comes from $ADVISOR_RUNS_DIR). The scenario
    benchmark's ``--whatif SECONDS`` adds the measured what-if ($ADVISOR_SCENARIO_WHATIF_SECONDS):
    ``whatif="auto"`` with that budget."""
    import advisor

    whatif_seconds = os.environ.get("ADVISOR_SCENARIO_WHATIF_SECONDS")
    if whatif_seconds:
        return advisor.AdvisorCallback(whatif="auto", whatif_max_seconds=float(whatif_seconds))
    return advisor.AdvisorCallback()


def family_seconds(default: float) -> float:
    """Training time of a model-family scenario (``ADVISOR_FAMILY_SECONDS`` overrides
    ``default``): long enough for the default baseline and what-if to measure within their
    share of the fit (a tenth of a fit of a minute or more)."""
    return float(os.environ.get("ADVISOR_FAMILY_SECONDS", default))


def time_budget(seconds: float) -> Any:
    """A callback that ends training at the first epoch end after ``seconds`` of training."""
    import keras

    class TimeBudget(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if time.perf_counter() - self.t0 >= seconds:
                self.model.stop_training = True

    return TimeBudget()


def fit(
    model: Any,
    data: Any,
    seconds: float = SECONDS,
    callbacks: list[Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``model.fit`` with the default advisor (and any extra callbacks) for about ``seconds``,
    quietly; prints the time and the epochs it took."""
    every = [
        advisor_callback(),
        *(callbacks or []),
        time_budget(seconds),
    ]  # made before the clock starts
    t0 = time.perf_counter()
    history = model.fit(data, epochs=10_000, verbose=0, callbacks=every, **kwargs)
    print(f"fit: {time.perf_counter() - t0:.2f} s, {len(history.epoch)} epochs")
    return history


def python_sleep(seconds: float) -> Callable[..., Any]:
    """A function that holds the Python thread for ``seconds`` (stands for decoding or parsing in
    Python) and returns its arguments. Sleeping costs no CPU, so load does not shorten it."""

    def work(*args: Any) -> Any:
        time.sleep(seconds)
        return args if len(args) != 1 else args[0]

    return work


def py_function_map(seconds: float, features: int = FEATURES) -> Callable[[Any, Any], Any]:
    """A tf.data map function that calls Python (``tf.py_function``) for ``seconds`` per element."""
    import tensorflow as tf

    work = python_sleep(seconds)

    def decode(x: Any, y: Any) -> Any:
        xo, yo = tf.py_function(work, [x, y], [tf.float32, tf.int64])
        xo.set_shape([features])
        yo.set_shape([])
        return xo, yo

    return decode
