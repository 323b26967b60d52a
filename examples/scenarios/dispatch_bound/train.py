"""Python dispatch-bound steps: a tiny model whose step is mostly the host calling into it.

A 16-unit MLP trains on batches of 32: the compiled step itself takes microseconds, and the
host's per-step work (the Python call, callbacks, fetching the next batch) dominates every step.
``model.compile(..., steps_per_execution=32)`` runs 32 steps per call (G551).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import tensorflow as tf

    x, y = common.arrays(32768, features=16)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE)
    common.fit(common.mlp(width=16, depth=1, features=16), ds)


if __name__ == "__main__":
    main()
