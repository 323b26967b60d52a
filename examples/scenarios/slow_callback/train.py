"""A slow per-batch callback: the fit's own callback holds the host for 6 ms at every batch end.

The callback stands for what people put in ``on_train_batch_end``: a metric computed in Python or
NumPy, a tensor read with ``float()`` (which waits for the step), a line written to a file. Each
training step of the MLP takes a few milliseconds; the hook takes twice that, so about two thirds
of the training loop is the callback. The hook sleeps (as ``common.python_sleep`` does): a busy
machine slows the step, not the hook, so the share can only fall to about half, still five times
the threshold of C460. The fix: the same work every N batches or at the epoch's end.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

HOOK_SECONDS = 0.006
BATCHES = 64


def per_batch_logger() -> object:
    import keras

    class PerBatchLogger(keras.callbacks.Callback):
        """Python work after every batch (stands for a metric or a log line per batch)."""

        def on_train_batch_end(self, batch, logs=None):
            time.sleep(HOOK_SECONDS)

    return PerBatchLogger()


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(BATCHES * 128)
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(128)
        .cache()
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )
    common.fit(
        common.mlp(width=512, depth=2), ds, steps_per_epoch=BATCHES, callbacks=[per_batch_logger()]
    )


if __name__ == "__main__":
    main()
