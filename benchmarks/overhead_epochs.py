"""Epoch-level A/B of the callback's cost on one backend: fastest and median epoch, per variant.

    KERAS_BACKEND=jax python benchmarks/overhead_epochs.py

Fits of 3 epochs (the first one dropped: compilation, run start) rotate through the variants six
times, so slow phases of a shared machine hit each variant alike. Complements overhead.py,
whose whole-fit ratios include each run's fixed start and end costs.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras
import numpy as np

import advisor

ROWS, FEATURES, WIDTH, BATCH, ROUNDS = 64 * 1500, 128, 512, 64, 6


class EpochTimer(keras.callbacks.Callback):
    """Times every epoch after the first into ``times[variant]``."""

    def __init__(self, variant: str, times: dict[str, list[float]]) -> None:
        super().__init__()
        self.variant, self.times, self.t0 = variant, times, 0.0

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.t0 = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if epoch > 0:
            self.times.setdefault(self.variant, []).append(time.perf_counter() - self.t0)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((ROWS, FEATURES), dtype=np.float32)
    y = rng.random((ROWS, 1), dtype=np.float32)
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    runs = tempfile.mkdtemp(prefix="advisor-overhead-")
    variants = {
        "none": lambda: [],
        "full": lambda: [
            advisor.AdvisorCallback(runs_dir=runs, log_every_seconds=None, baseline=None)
        ],
        "no-telemetry": lambda: [
            advisor.AdvisorCallback(
                runs_dir=runs, log_every_seconds=None, telemetry=False, baseline=None
            )
        ],
    }
    times: dict[str, list[float]] = {}
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # compile outside the comparison
    for _ in range(ROUNDS):
        for name, extra in variants.items():
            model.fit(
                x,
                y,
                batch_size=BATCH,
                epochs=3,
                verbose=0,
                shuffle=False,
                callbacks=[EpochTimer(name, times), *extra()],
            )
    for name in variants:
        print(
            f"{name}: min {min(times[name]) * 1000:.1f} ms  "
            f"median {statistics.median(times[name]) * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
