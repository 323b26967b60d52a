"""The baseline's noise band versus its segment length, quiet and with one core kept busy.

    python benchmarks/baseline_noise.py [--seconds 0.75,1.5,3,6] [--repeats 3] [--width 256]

A tiny model (a ~1 ms step on two CPU cores, where noise bites hardest) is measured with
``advisor.measure_input`` on two inputs: a healthy one (cached and prefetched: no input cost)
and a half-bound one (each batch waits in Python as long as the model's step: ~50 % cost). For
each ``seconds`` (12 rounds × 2 arms, so a segment lasts seconds ÷ 24), the measurements
alternate between a quiet machine and one where another process spins on one core; everything
runs in this one process, side by side. Prints, per setting: the median cost and band (±), how
often the cost was outside its band, the stalled rounds set aside, and the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# A busy core that also stops by itself when this process is gone.
SPIN = """
import os, sys, time
parent = int(sys.argv[1])
while True:
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        pass
    try:
        os.kill(parent, 0)
    except OSError:
        break
"""
FEATURES, CLASSES, BATCH = 32, 4, 32


def build(width: int) -> Any:
    import keras

    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def datasets(step_s: float) -> dict[str, Any]:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    n = 64 * BATCH
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    y = rng.integers(0, CLASSES, n).astype("int64")
    healthy = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .cache()
        .shuffle(n, seed=0)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )

    def wait(a: Any, b: Any) -> Any:
        time.sleep(step_s)
        return a, b

    def load(a: Any, b: Any) -> Any:
        a, b = tf.py_function(wait, [a, b], [tf.float32, tf.int64])
        return tf.ensure_shape(a, [None, FEATURES]), tf.ensure_shape(b, [None])

    half = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).map(load)
    return {"healthy": healthy, "half-bound": half}


def step_seconds(model: Any, dataset: Any) -> float:
    cached = dataset.take(1).cache().repeat()
    model.fit(cached, steps_per_epoch=10, epochs=1, verbose=0)
    t0 = time.perf_counter()
    model.fit(cached, steps_per_epoch=200, epochs=1, verbose=0)
    return (time.perf_counter() - t0) / 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", default="0.75,1.5,3,6", help="measuring times to compare (comma-separated)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=256)
    args = parser.parse_args()
    from advisor.experiments.baseline.engine import measure_input

    model = build(args.width)
    data = datasets(0.0)
    model.fit(data["healthy"], epochs=1, verbose=0)
    step_s = step_seconds(model, data["healthy"])
    data = datasets(step_s)
    print(f"step {step_s * 1000:.2f} ms (quiet); load average {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[tuple[str, float, str], list[Any]] = {}
    for repeat in range(args.repeats):
        for seconds in (float(s) for s in args.seconds.split(",")):
            for scenario, dataset in data.items():
                for load in ("quiet", "busy core") if repeat % 2 == 0 else ("busy core", "quiet"):
                    spin = (
                        subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
                        if load == "busy core"
                        else None
                    )
                    try:
                        time.sleep(0.2 if spin else 0.0)
                        t0 = time.perf_counter()
                        result = measure_input(
                            model, dataset, seconds=seconds, source_cache=False, data_only=False
                        )
                        wall = time.perf_counter() - t0
                    finally:
                        if spin is not None:
                            spin.kill()
                            spin.wait()
                    band = result.bound
                    results.setdefault((scenario, seconds, load), []).append((result, band, wall))
                    cost = band.value if band else float("nan")
                    half = band.half_width if band else float("nan")
                    print(
                        f"  {scenario:10s} {seconds:4.2f} s {load:9s}: "
                        f"cost {cost:+.3f} ± {half:.3f}  outside={result.bound_outside_band}  "
                        f"stalled={result.stalled_rounds}  wall {wall:.1f} s",
                        flush=True,
                    )
    print()
    print(
        "| input | seconds | segment | load | median cost | median band (±) | outside the band "
        "| stalled rounds | median wall |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for (scenario, seconds, load), rows in results.items():
        costs = [b.value for _, b, _ in rows if b]
        widths = [b.half_width for _, b, _ in rows if b]
        outside = sum(1 for r, _, _ in rows if r.bound_outside_band)
        stalled = sum(r.stalled_rounds for r, _, _ in rows)
        print(
            f"| {scenario} | {seconds:g} | {seconds / 24 * 1000:.0f} ms | {load} | "
            f"{statistics.median(costs):.1%} | "
            f"{statistics.median(widths):.1%} | {outside}/{len(rows)} | {stalled} | "
            f"{statistics.median(w for _, _, w in rows):.1f} s |"
        )


if __name__ == "__main__":
    main()
