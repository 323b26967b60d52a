"""Missing overlap: the input and the step take turns instead of running side by side.

Each batch is prepared in Python for 10 ms (``tf.py_function`` after ``batch``) and the
model's step takes about as long; the pipeline has no ``prefetch`` and its options switch
autotuning off, so tf.data does not add one either. Input and compute never overlap, and each
step waits as long as it computes; a prefetch at the end (and autotuning back on) lets the next
batch be made while the step runs (C401), halving the step time.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(8192)
    work = common.python_sleep(0.010)

    def prepare(xb, yb):
        xo, yo = tf.py_function(work, [xb, yb], [tf.float32, tf.int64])
        xo.set_shape([None, common.FEATURES])
        yo.set_shape([None])
        return xo, yo

    options = tf.data.Options()
    options.autotune.enabled = False
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).map(prepare).with_options(options)
    common.fit(common.mlp(width=1024), ds)


if __name__ == "__main__":
    main()
