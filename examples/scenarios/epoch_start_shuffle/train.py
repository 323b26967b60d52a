"""Epoch-start stall from a refilled shuffle buffer: the dataset is shuffled element by element
with a buffer as large as the dataset (a full shuffle), after a per-element map.

The dataset is finite, so Keras builds a new iterator at every epoch, and that iterator must pass
every element through the map into the shuffle buffer before it yields its first batch. The wait
happens inside the epoch's first step (the step asks the iterator for a batch), not before it, so
without the first-step attribution it reads as one slow step per epoch. Once filled, the buffer
serves the rest of the epoch from memory: the steps are not input-bound.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 32
BATCH = 256


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(BATCHES * BATCH)

    def jitter(features: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        # a per-element augmentation: a few small ops on each sample
        for _ in range(6):
            features = features + 0.01 * tf.sin(features)
        return features, label

    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .map(jitter, num_parallel_calls=tf.data.AUTOTUNE)
        .shuffle(BATCHES * BATCH, seed=0)  # a full shuffle: refilled at every epoch
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )
    model = common.mlp(width=1024, depth=3)
    common.fit(model, ds)


if __name__ == "__main__":
    main()
