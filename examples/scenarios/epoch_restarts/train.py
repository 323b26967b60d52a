"""Epoch restarts: the healthy scenario's pipeline without ``.repeat()``.

Keras then builds a new input iterator at every epoch. On TensorFlow 2.21, with tf.data's
autotuning on and a step that keeps both cores of a 2-core machine busy, building it stalls for
about a second in a third to a half of the epochs (measured without Keras too: ``iter(dataset)``
itself waits; with autotuning off it does not). With epochs of 1.5 s of steps that is a fifth to a
third of the training time — four to six times M154's threshold. Everything else is as healthy.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 96


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(BATCHES * 256)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(256).cache().shuffle(BATCHES, seed=0)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model = common.mlp(width=1024, depth=3)
    common.fit(model, ds)


if __name__ == "__main__":
    main()
