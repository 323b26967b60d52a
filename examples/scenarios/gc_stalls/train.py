"""Periodic stalls from Python's garbage collector: full (generation-2) collections of a large
heap of Python objects, set off by a callback that keeps a rolling history of per-batch records.

The script holds 300,000 small Python records (a vocabulary, metadata kept as dicts) and a
callback keeps the last 40 batches' records (4,000 dicts each). The records that survive are
promoted to the oldest generation, and once they add up to a quarter of it, Python runs a full
collection, which walks every tracked object: about every 30 batches, a step that takes several
tenths of a second instead of milliseconds. ``gc.freeze()`` after building the heap would move it
out of the collector's sight. The collections run inside the callback's hook (its allocations
set them off), so the callback's time is large too: C460 is also true of this run.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

HEAP = 300_000  # long-lived Python records made before the fit
PER_BATCH = 4_000  # records the callback makes at every batch
KEPT = 40  # batches of records it keeps


def main() -> None:
    import keras
    import tensorflow as tf

    heap = [{"id": i, "tags": [i]} for i in range(HEAP)]

    class BatchHistory(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.kept: collections.deque[list[dict]] = collections.deque(maxlen=KEPT)

        def on_train_batch_end(self, batch, logs=None):
            self.kept.append([{"batch": batch, "v": [j]} for j in range(PER_BATCH)])

    x, y = common.arrays(16384)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=512), ds, callbacks=[BatchHistory()])
    print(f"heap of {len(heap):,} records")


if __name__ == "__main__":
    main()
