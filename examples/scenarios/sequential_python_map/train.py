"""Sequential Python map: each element goes through ``tf.py_function`` one at a time.

A millisecond of Python per element (64 ms per batch of 64), a map without
``num_parallel_calls``: the model's ~2 ms step waits for its input at every step, thirty times
over. The fix is a parallel map in TensorFlow ops (C401, G505); M108 measures the cost.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(2048)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=0)
    ds = ds.map(common.py_function_map(0.001)).batch(64).prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(), ds)


if __name__ == "__main__":
    main()
