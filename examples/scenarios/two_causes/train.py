"""Two causes at once, ranked by cost: a slow sequential input and a heavy validation.

The input (a sequential ``tf.py_function`` map, a millisecond per element) costs nine tenths of
every training step; validation, on 64 times the training data from a cached pipeline (but
without the slow map), takes about as long as the training in each epoch. Both are findings; the
input comes first because it costs more (C401 before D607), and the report says how much each is
worth.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(2048)
    vx, vy = common.arrays(131072, seed=1)
    train = tf.data.Dataset.from_tensor_slices((x, y)).map(common.py_function_map(0.001)).batch(64)
    train = train.prefetch(tf.data.AUTOTUNE)
    val = tf.data.Dataset.from_tensor_slices((vx, vy)).batch(256).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=512), train, validation_data=val)


if __name__ == "__main__":
    main()
