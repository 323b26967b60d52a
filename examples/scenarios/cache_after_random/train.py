"""A cache placed after random augmentation: every epoch replays the first epoch's random draw.

The pipeline is fast (everything is cached in memory), but the ``.cache()`` comes after a random
flip-and-noise map, so the augmentation runs once and is frozen: the model sees the same
"random" samples every epoch. A silent correctness problem the advisor reads from the graph
(C402): move the cache before the random map.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(16384)

    def augment(xi, yi):
        flipped = tf.where(tf.random.uniform(()) < 0.5, -xi, xi)
        return flipped + tf.random.normal(tf.shape(xi), stddev=0.05), yi

    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(
        augment, num_parallel_calls=tf.data.AUTOTUNE
    )
    ds = ds.cache().shuffle(4096, seed=0).batch(256).prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=1024, depth=3), ds)


if __name__ == "__main__":
    main()
