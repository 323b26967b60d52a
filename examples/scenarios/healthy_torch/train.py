"""Healthy on Keras 3's torch backend: arrays in memory and a step long enough to dwarf input.

The control scenario of the ``healthy`` one, on torch: a 2-layer, 1024-wide MLP trains in
float32 on NumPy arrays (6,144 samples in batches of 128). Each step takes tens of milliseconds,
so slicing a batch out of the arrays costs nothing beside it and the host's per-step dispatch
does not matter; the fit reaches a fair share of what this CPU computes (G552 passes, with the
fraction of speed of light in the run). Nothing here should be a warning.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

SAMPLES = 48 * 128  # epochs of one to three seconds


def main() -> None:
    x, y = common.arrays(SAMPLES)
    common.fit(common.mlp(width=1024, depth=2), x, y=y, batch_size=128)


if __name__ == "__main__":
    main()
