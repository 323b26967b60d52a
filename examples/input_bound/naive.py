"""An input-bound training job: the classic tf.data mistakes, on purpose.

Each element goes through a Python function (``tf.py_function``) that costs a millisecond
(about 70 ms per batch of 64), the map runs one element at a time, and nothing prefetches: the
model, whose step takes 1–7 ms depending on the backend, waits for its input at every step — ten
times its step or more, so the input cost is decisive on every backend, also on a busy machine.
``fixed.py`` is the same job with the pipeline repaired. Three epochs take about 4 s on two CPU
cores.

    python examples/input_bound/naive.py            # trains and writes a run to ./advisor-runs
    advisor check                                   # diagnoses the latest run

The input is tf.data on every backend: ``KERAS_BACKEND=jax`` or ``torch`` train the same model
on it, and ``TF_USE_LEGACY_KERAS=1`` builds the model with legacy tf.keras (tf_keras).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

NUM_SAMPLES = 1024
FEATURES = 64
CLASSES = 10
BATCH_SIZE = 64
DECODE_SECONDS = 0.001  # simulated per-element decode cost in Python


def synthetic_arrays(n: int = NUM_SAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    y = rng.integers(0, CLASSES, size=(n,)).astype("int64")
    return x, y


def _slow_decode(x: Any, y: Any) -> tuple[Any, Any]:
    time.sleep(DECODE_SECONDS)  # stands for JPEG decoding, tokenising, parsing in Python
    return x, y


def make_dataset(n: int = NUM_SAMPLES) -> Any:
    import tensorflow as tf

    x, y = synthetic_arrays(n)

    def decode(xi: Any, yi: Any) -> tuple[Any, Any]:
        xo, yo = tf.py_function(_slow_decode, [xi, yi], [tf.float32, tf.int64])
        xo.set_shape([FEATURES])
        yo.set_shape([])
        return xo, yo

    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n, seed=0)
    ds = ds.map(decode)  # sequential, Python-bound
    return ds.batch(BATCH_SIZE)  # and no prefetch


def keras_module() -> Any:
    """Keras 3, or legacy tf.keras (tf_keras, Keras 2) when ``TF_USE_LEGACY_KERAS=1``."""
    if os.environ.get("TF_USE_LEGACY_KERAS", "").strip().lower() in ("1", "true", "yes"):
        import tensorflow as tf

        return tf.keras
    import keras

    return keras


def build_model() -> Any:
    keras = keras_module()
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def train(callbacks: list[Any] | None = None, epochs: int = 3, verbose: int = 0) -> Any:
    model = build_model()
    # shuffle=False: the dataset shuffles itself (Keras would only warn that it ignores the flag).
    model.fit(
        make_dataset(), epochs=epochs, callbacks=callbacks or [], verbose=verbose, shuffle=False
    )
    return model


def main(argv: list[str] | None = None) -> None:
    import advisor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--runs-dir", default=None)
    parser.add_argument("--instance-type", default="g5.xlarge")
    args = parser.parse_args(argv)
    cb = advisor.AdvisorCallback(
        runs_dir=args.runs_dir,
        instance_type=args.instance_type,
        name="input-bound-naive",
        window_seconds=2.0,
        baseline="end",
    )
    train([cb], epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main()
