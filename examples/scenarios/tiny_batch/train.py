"""Tiny batch: four samples per step leave the hardware idle between steps.

Each step trains on 4 samples, so its work on samples is a sliver of what every step costs
anyway (the host's dispatch, one kernel launch per op): the step takes under a millisecond and
samples/s is a small fraction of what a batch of 256 reaches on the same model. The fix is a
larger batch (M153); ``steps_per_execution`` (G551) removes only the host's part.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(4096)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=256), ds)


if __name__ == "__main__":
    main()
