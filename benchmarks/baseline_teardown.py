"""The baseline with and without tearing each segment's input down, side by side.

    python benchmarks/baseline_teardown.py [--pairs 3] [--seconds 2]

A CPU-bound pipeline (examples/scenarios/heavy_augmentation: random projections of every
element in a parallel map, prefetched) measured by ``advisor.measure_input``, alternating the
product as it is (each segment's input torn down: ``tear_down``) and the same with the teardown
switched off, as it was before: a ``fit`` stopped mid-epoch then leaves its iterator to the
garbage collector, and its threads go on filling the buffers in the next segment's time. Prints
each measurement's real and cached samples/s, the input's cost and its band.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "scenarios"))

WIDE = 128


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="the baseline's measuring time")
    args = parser.parse_args(argv)

    import common
    import tensorflow as tf

    import advisor
    import advisor.experiments.baseline.engine as baseline

    x, y = common.arrays(4096, features=WIDE)

    def augment(xi, yi):  # as examples/scenarios/heavy_augmentation/train.py
        v = xi[None, :]
        for _ in range(2):
            v = tf.tanh(v @ tf.random.normal((WIDE, WIDE), stddev=WIDE**-0.5))
        return v[0], yi

    def dataset():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=0)
        return (
            ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(64)
            .prefetch(tf.data.AUTOTUNE)
        )

    model = common.mlp(width=128, features=WIDE)
    model.fit(dataset(), epochs=2, verbose=0)
    torn = baseline.tear_down
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs")
    print("| arm order | teardown | real samples/s | cached samples/s | input cost (band) |")
    print("|---|---|---:|---:|---:|")
    for pair in range(args.pairs):
        for teardown in (True, False) if pair % 2 == 0 else (False, True):
            baseline.tear_down = torn if teardown else (lambda backend: None)
            try:
                r = advisor.measure_input(
                    model, dataset(), seconds=args.seconds, rounds=12, max_seconds=30, steps=20
                )
            finally:
                baseline.tear_down = torn
            print(
                f"| pair {pair + 1} | {'yes' if teardown else 'no'} | "
                f"{r.real_samples_per_s:,.0f} | {r.cached_samples_per_s:,.0f} | "
                f"{r.bound_fraction:.3f} (±{r.bound_band or 0:.3f}) |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
