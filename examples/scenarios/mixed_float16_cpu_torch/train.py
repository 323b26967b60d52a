"""mixed_float16 on a CPU with Keras 3 on torch: every step slower than in float32.

A small LSTM classifier (64 units over sequences of 20 steps × 32 features, batches of 64, its
output layer in float32 as mixed-precision guides advise) trains on NumPy arrays under
``mixed_float16`` on Keras's torch backend. A CPU has no float16 units: each of the
recurrence's small matmuls and gates computes in float16 kernels (or casts to and from it), and
the loss scaling adds its own work, so each step takes about twice as long or more as in float32
(benchmarks/RESULTS.md, "Precision"). The precision what-if runs by itself (the policy is not
float32) and measures float32 and mixed_bfloat16 beside it, each in a fresh process (G553).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import keras

    keras.mixed_precision.set_global_policy("mixed_float16")
    x, y = common.sequences(4096)
    common.fit(common.lstm_classifier(), x, y=y, batch_size=64)


if __name__ == "__main__":
    main()
