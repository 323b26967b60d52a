"""Heavy per-element augmentation: random TensorFlow ops on every element saturate the CPUs.

The pipeline is already parallel (``num_parallel_calls=AUTOTUNE``) and prefetched; the work is
simply too much for the host: two random 128×128 projections per element (32,768 random
numbers to draw), against a small model whose step costs a fraction of a batch's augmentation. More
parallelism cannot help: the CPUs are full (C404: offload the work, or do it once offline or on an
accelerator).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

WIDE = 128


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(4096, features=WIDE)

    def augment(xi, yi):
        v = xi[None, :]
        for _ in range(2):  # random projections: different every epoch, nothing to cache
            v = tf.tanh(v @ tf.random.normal((WIDE, WIDE), stddev=WIDE**-0.5))
        return v[0], yi

    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=0)
    ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(64).prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=128, features=WIDE), ds)


if __name__ == "__main__":
    main()
