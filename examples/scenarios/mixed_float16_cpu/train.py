"""mixed_float16 on a CPU, as GPU tutorials advise: every step several times slower than float32.

A small convolutional network (two 3×3 convolutions of 32 filters on 32×32 RGB images, batches of
64) trains on cached batches under ``mixed_float16``. A CPU has no float16 tensor cores: its
float16 convolution kernels are far slower than float32's, and every layer casts its inputs, so
each step takes several times as long (7.7× on the project's development host; benchmarks/
RESULTS.md). The precision what-if runs by itself (the policy is not float32) and measures
float32 and mixed_bfloat16 beside it, each in a fresh process (G553). ``KERAS_BACKEND`` chooses
the backend.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 16
BATCH = 64


def main() -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    keras.mixed_precision.set_global_policy("mixed_float16")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCHES * BATCH, 32, 32, 3)).astype("float32")
    y = rng.integers(0, common.CLASSES, size=(BATCHES * BATCH,)).astype("int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).cache().repeat()
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(common.CLASSES, dtype="float32"),
        ]
    )
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    common.fit(model, ds.prefetch(tf.data.AUTOTUNE), steps_per_epoch=BATCHES)


if __name__ == "__main__":
    main()
