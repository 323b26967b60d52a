"""What a nested ``fit`` costs beyond its steps: the start of every baseline and what-if segment.

    python benchmarks/fit_start.py [--fits 30] [--busy 1]

The baseline and the what-if measure each arm in a ``fit`` of its own (a fresh epoch iterator,
callbacks set up, the compiled step reused). Their budgets reserve time for that start
(``experiments/settings.py``: ``AUTO_BASELINE_MIN_ALLOWANCE``; ``experiments/whatif/state.py``:
``FIT_START_SECONDS``). This times ``model.fit(cached, epochs=1, steps_per_epoch=1)`` on a small
compiled MLP, after a warm-up, and prints the median and 90th percentile of the wall time less
the one step's own time; ``--busy N`` keeps N other processes spinning meanwhile, as on a
shared CI machine. The numbers are this host's: record them in RESULTS.md with the host.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _spin() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fits", type=int, default=30)
    parser.add_argument(
        "--busy", type=int, default=0, help="other processes kept spinning meanwhile"
    )
    args = parser.parse_args(argv)
    import keras
    import numpy as np
    import tensorflow as tf

    x = np.random.default_rng(0).normal(size=(64, 32)).astype("float32")
    y = np.zeros((64, 1), "float32")
    cached = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).take(1).cache().repeat()
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    model.fit(cached, epochs=1, steps_per_epoch=20, verbose=0)  # compile and warm
    t0 = time.perf_counter()
    model.fit(cached, epochs=1, steps_per_epoch=200, verbose=0)
    step = (time.perf_counter() - t0) / 200
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        starts = []
        for _ in range(args.fits):
            t0 = time.perf_counter()
            model.fit(cached, epochs=1, steps_per_epoch=1, verbose=0)
            starts.append(time.perf_counter() - t0 - step)
    finally:
        for p in spinners:
            p.terminate()
    starts.sort()
    p90 = starts[min(len(starts) - 1, int(0.9 * len(starts)))]
    print(
        f"cpus {os.cpu_count()}, busy {args.busy}, step {step * 1000:.2f} ms, fits {args.fits}: "
        f"a nested fit's start median {statistics.median(starts) * 1000:.0f} ms, "
        f"p90 {p90 * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
