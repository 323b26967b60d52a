"""An image classifier with its augmentation layers inside the model, as in the Keras
"image classification from scratch" example.

``RandomFlip``, ``RandomRotation`` and ``RandomZoom`` run as the model's first layers, on every
training step, before a small convolutional network; the images are arrays in memory (random, of
a realistic shape). Steps are long (hundreds of milliseconds on two busy cores). What must hold:
the default baseline decides from training's step time whether three rounds fit its allowance
and, when they do not, does not start and says why in one line; the fit is not slowed by a
measurement that cannot give a verdict. Keras refuses ``jit_compile=True`` on the augmentation
layers, so an unmeasured "try XLA" (G502) must not lead the findings.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

SIZE, CLASSES = 96, 5


def model():
    import keras
    from keras import layers

    augmentation = keras.Sequential(
        [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1), layers.RandomZoom(0.1)]
    )
    inputs = keras.Input((SIZE, SIZE, 3))
    x = layers.Rescaling(1.0 / 255)(augmentation(inputs))
    for filters in (32, 64, 128):
        x = layers.Conv2D(filters, 3, strides=2, padding="same", activation="relu")(x)
        x = layers.BatchNormalization()(x)
    x = layers.Dropout(0.25)(layers.GlobalAveragePooling2D()(x))
    classifier = keras.Model(inputs, layers.Dense(CLASSES)(x))
    classifier.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return classifier


def main() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(1024, SIZE, SIZE, 3)).astype("float32")
    labels = rng.integers(0, CLASSES, size=(1024,)).astype("int64")
    common.fit(model(), images, seconds=common.family_seconds(60), y=labels, batch_size=64)


if __name__ == "__main__":
    main()
