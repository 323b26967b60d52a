"""Models for the backend what-if's tests; importable by the fresh processes it starts (a custom
class is found there only once its module is imported)."""

from __future__ import annotations

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="advisor_tests")
class TfSquare(keras.layers.Layer):
    """A custom layer calling ``tf.*`` directly: it runs on TensorFlow only."""

    def call(self, inputs):  # type: ignore[no-untyped-def]
        import tensorflow as tf

        return tf.math.square(inputs)


def dense_model(features: int = 32, tf_only: bool = False) -> keras.Model:
    layers = [keras.Input((features,)), keras.layers.Dense(64, activation="relu")]
    if tf_only:
        layers.append(TfSquare())
    model = keras.Sequential(layers + [keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    return model


def arrays(rows: int = 2048, features: int = 32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((rows, features), dtype=np.float32), rng.random((rows, 1), dtype=np.float32)
