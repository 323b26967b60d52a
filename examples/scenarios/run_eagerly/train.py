"""run_eagerly=True: the train step runs op by op in Python instead of as a compiled graph.

``model.compile(..., run_eagerly=True)`` is for debugging; left on, every op of every step is
dispatched from Python. The advisor reads it from the model (C450) and estimates the cost.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(8192)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=512, run_eagerly=True), ds)


if __name__ == "__main__":
    main()
