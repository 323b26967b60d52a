"""Expected growth, not a leak: an in-memory ``cache()`` that fills over the first epochs.

Each epoch reads a quarter of a 240 MB dataset, and the dataset is cached in memory after its
decoding map: the cache grows by about 60 MB an epoch for four epochs, then holds the whole
dataset and stops growing. The advisor must leave that filling out (and say so), and find no leak
and no memory warning: the steady state after the cache is full is flat.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

SAMPLES = 16_384
FEATURES = 3_840  # 16,384 × 3,840 float32 = 240 MB once cached
BATCH = 256
STEPS = SAMPLES // BATCH // 4  # an epoch reads a quarter of the dataset


def main() -> None:
    import numpy as np
    import tensorflow as tf

    def decode(seed):
        # stands for decoding a record: the features come from the element's seed
        x = tf.sin(tf.cast(seed, tf.float32) + tf.linspace(0.0, 10.0, FEATURES))
        return x, tf.cast(seed % common.CLASSES, tf.int64)

    seeds = np.arange(SAMPLES, dtype="int64")
    ds = (
        tf.data.Dataset.from_tensor_slices(seeds)
        .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
        .repeat()
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )
    model = common.mlp(width=256, depth=2, features=FEATURES)
    common.fit(model, ds, steps_per_epoch=STEPS)


if __name__ == "__main__":
    main()
