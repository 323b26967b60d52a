"""from_generator input: a Python generator feeds tf.data, one element at a time under the GIL.

Each element takes half a millisecond of Python (32 ms per batch of 64) while a step takes about
2 ms; ``Dataset.from_generator`` cannot run in parallel, so prefetching alone cannot hide it. The
fix reads arrays or files with tf.data ops, or interleaves several generators (C401).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

SAMPLES = 4096


def elements():
    x, y = common.arrays(SAMPLES)
    for i in range(SAMPLES):
        time.sleep(0.0005)  # parsing a record in Python
        yield x[i], y[i]


def main() -> None:
    import tensorflow as tf

    spec = (tf.TensorSpec((common.FEATURES,), tf.float32), tf.TensorSpec((), tf.int64))
    ds = tf.data.Dataset.from_generator(elements, output_signature=spec).batch(64)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(), ds)


if __name__ == "__main__":
    main()
