"""mixed_float16 on a CPU with Keras 3 on JAX: a little slower than float32, not several times.

The ``mixed_float16_cpu_torch`` scenario's LSTM classifier (64 units over sequences of 20 steps ×
32 features, batches of 64, its output layer in float32 as mixed-precision guides advise) trains
on NumPy arrays under ``mixed_float16`` on Keras's JAX backend. XLA's CPU compiler computes
float16 matmuls about as fast as float32 here, so the policy costs little more than casts and
loss scaling: about 1.3× slower than float32 on the development host (benchmarks/RESULTS.md,
"Precision"), near G553's threshold on a busy machine. The precision what-if runs by itself (the
policy is not float32) and measures float32 and mixed_bfloat16 beside it, each in a fresh
process; G553 fails or passes with the run's noise, and the measured slowdown is in the run
either way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "jax"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402


def main() -> None:
    import keras

    keras.mixed_precision.set_global_policy("mixed_float16")
    x, y = common.sequences(4096)
    common.fit(common.lstm_classifier(), x, y=y, batch_size=64)


if __name__ == "__main__":
    main()
