"""A full checkpoint of a large model at every short epoch.

``ModelCheckpoint`` saves the whole model (weights and optimizer state, a ~100 MB ``.keras``
file for this 8-million-parameter MLP) at the end of every epoch, and the epochs are short (a
dozen steps). Serialising and writing the file takes about as long as the epoch's training: a
large share of the wall clock goes to files nobody reads. On a busy machine both the steps and the
saves slow down, so the share holds. The fix: save less often (``save_freq``), weights only, or
asynchronously.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 12


def main() -> None:
    import keras
    import tensorflow as tf

    x, y = common.arrays(BATCHES * 64)
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(64)
        .cache()
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )
    model = common.mlp(width=1600, depth=4)
    with tempfile.TemporaryDirectory(prefix="advisor-checkpoints-") as folder:
        every_epoch = keras.callbacks.ModelCheckpoint(str(Path(folder) / "model.keras"))
        common.fit(model, ds, steps_per_epoch=BATCHES, callbacks=[every_epoch])


if __name__ == "__main__":
    main()
