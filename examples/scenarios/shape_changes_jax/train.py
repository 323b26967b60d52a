"""A Keras fit on JAX whose batches change shape every few steps: sequences batched as they come,
at one of 12 lengths, the length changing every 3 batches. JAX compiles the train step again for
every new shape (keras-team/keras#20411 shows the same on a larger scale), and the fit's throughput
looks merely uneven.

The compile events come from ``jax.monitoring``; the cause of each recompilation from JAX's own
cache-miss explanation (different input types). C453 names the step and the shapes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

BATCH = 64
BATCHES = 36  # an epoch: 12 lengths, 3 batches each
LENGTHS = [16 + 8 * i for i in range(12)]
CHANNELS = 8


def main() -> None:
    import keras
    import numpy as np

    class Sequences(keras.utils.PyDataset):
        """Batches of sequences whose length changes every 3 batches (no padding to a bucket)."""

        def __init__(self) -> None:
            super().__init__()
            rng = np.random.default_rng(0)
            self.data = rng.normal(size=(BATCH, max(LENGTHS), CHANNELS)).astype("float32")
            self.labels = rng.integers(0, common.CLASSES, size=(BATCH,)).astype("int64")
            self.epoch = 0

        def __len__(self) -> int:
            return BATCHES

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            length = LENGTHS[(index // 3 + self.epoch) % len(LENGTHS)]
            return self.data[:, :length], self.labels

        def on_epoch_end(self) -> None:
            self.epoch += 1

    model = keras.Sequential(
        [
            keras.Input((None, CHANNELS)),
            keras.layers.Dense(32, activation="relu"),  # per time step
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(common.CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    common.fit(model, Sequences())


if __name__ == "__main__":
    main()
