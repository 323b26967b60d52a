"""Healthy, with the callbacks people usually add: EarlyStopping, CSVLogger and TensorBoard.

The control for the time budget: the ``healthy`` scenario's input and model, plus an early stop
on the loss (with a patience the run never exhausts), a CSV log of every epoch and TensorBoard
writing epoch summaries (no profiling). Each costs well under a millisecond per epoch; none may
be named as slow, and goodput stays high.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 48


def main() -> None:
    import keras
    import tensorflow as tf

    x, y = common.arrays(BATCHES * 256)
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(256)
        .cache()
        .shuffle(BATCHES, seed=0)
        .repeat()
    )
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model = common.mlp(width=2048, depth=3)
    with tempfile.TemporaryDirectory(prefix="advisor-callbacks-") as folder:
        usual = [
            keras.callbacks.EarlyStopping(monitor="loss", patience=1000),
            keras.callbacks.CSVLogger(str(Path(folder) / "log.csv")),
            keras.callbacks.TensorBoard(log_dir=str(Path(folder) / "tb"), profile_batch=0),
        ]
        common.fit(model, ds, steps_per_epoch=BATCHES, callbacks=usual)


if __name__ == "__main__":
    main()
