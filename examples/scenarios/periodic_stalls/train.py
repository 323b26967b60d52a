"""Periodic stalls in a short run: a callback blocks training for a quarter second every 25 steps.

Stands for a synchronous checkpoint, a metrics upload or a log flush inside the epoch. The run
lasts about fifteen seconds — too short for ten-second windows — and the stalls cost well over a
third of it (M150 counts them and their cost; M103 sees the throughput swing).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import keras
    import tensorflow as tf

    class Checkpointish(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch % 25 == 24:
                time.sleep(0.25)

    x, y = common.arrays(16384)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=1024), ds, callbacks=[Checkpointish()])


if __name__ == "__main__":
    main()
