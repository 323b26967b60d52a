"""Healthy: cached, batched, prefetched input and a step long enough to dwarf what input costs.

The control scenario: nothing here should be a warning. The batches are cached in memory (and
shuffled as whole batches), prefetched, and each step (a 3-layer, 1024-wide MLP on 256 samples) takes several
milliseconds, so neither the input nor the host's per-step dispatch matters.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(24576)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(256).cache().shuffle(96, seed=0)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model = common.mlp(width=1024, depth=3)
    common.fit(model, ds)


if __name__ == "__main__":
    main()
