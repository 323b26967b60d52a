"""Validation dominating the epoch: each epoch evaluates on eight times the data it trains on.

Training sees 4,096 samples an epoch and validation 32,768: most of every epoch (about three
quarters; an evaluation step costs about a third of a training step) is evaluation on the
training device. Validate less often
(``validation_freq``), on fewer steps, or elsewhere (D607).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(4096)
    vx, vy = common.arrays(32768, seed=1)
    train = tf.data.Dataset.from_tensor_slices((x, y)).batch(256).cache().prefetch(tf.data.AUTOTUNE)
    val = tf.data.Dataset.from_tensor_slices((vx, vy)).batch(256).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=1024, depth=3), train, validation_data=val)


if __name__ == "__main__":
    main()
