"""A PyDataset without workers, on JAX: every batch is loaded on the training thread.

``keras.utils.PyDataset`` loads batches with ``workers=1`` by default: one batch at a time, in
line with training. Each batch here takes 20 ms of Python (reading and decoding, say), the
model's step about a tenth of that. ``workers=4`` (and ``use_multiprocessing=True`` for
CPU-heavy Python) loads them ahead (C401). Runs on Keras 3's JAX backend.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ["KERAS_BACKEND"] = "jax"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import keras

    x, y = common.arrays(6144)

    class Batches(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__()  # workers=1: no loading ahead

        def __len__(self) -> int:
            return len(x) // 64

        def __getitem__(self, i: int):
            time.sleep(0.02)  # reading and decoding a batch in Python
            return x[i * 64 : (i + 1) * 64], y[i * 64 : (i + 1) * 64]

    common.fit(common.mlp(), Batches())


if __name__ == "__main__":
    main()
