"""A memory leak: a callback that keeps a copy of the model and its optimizer at every epoch.

The callback stands for the "keep the best weights in memory" pattern written without a bound: at
each epoch's end it appends the weights and the optimizer's variables (Adam's moments) to a list,
about 55 MB per epoch for this 4.8-million-parameter MLP. Nothing is freed, so the process grows
by that much every epoch; the fit asks for 10,000 epochs, so at that rate the host's memory runs
out long before the fit would end. The advisor must say so during the fit and in ``advisor check``
(M180, the first warning), with the rate and the epoch at which memory runs out, and name the
callback. The fix: keep only the best copy (or write checkpoints to disk).

Epochs are short (8 steps) so that a busy machine still runs the seven a verdict needs; the
scenario stops itself after 16 epochs, so that it keeps at most about 1 GB on a shared machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCHES = 8  # short epochs: many readings in a short fit, also on a busy machine
EPOCHS = 16  # at most: the fit ends here or after its time, whichever comes first (≤ 1 GB kept)


def snapshot_keeper() -> object:
    import keras
    import numpy as np

    class InMemorySnapshots(keras.callbacks.Callback):
        """Keeps every epoch's weights and optimizer state, to pick the best one later."""

        def __init__(self) -> None:
            super().__init__()
            self.snapshots: list[list[np.ndarray]] = []

        def on_epoch_end(self, epoch, logs=None):
            state = [np.array(v) for v in self.model.get_weights()]
            state += [np.array(v) for v in self.model.optimizer.variables]
            self.snapshots.append(state)
            if epoch + 1 >= EPOCHS:
                self.model.stop_training = True

    return InMemorySnapshots()


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(BATCHES * 128)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).cache().repeat()
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model = common.mlp(width=1536, depth=3)
    common.fit(model, ds, steps_per_epoch=BATCHES, callbacks=[snapshot_keeper()])


if __name__ == "__main__":
    main()
