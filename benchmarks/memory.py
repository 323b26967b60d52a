"""The memory what-if against a run at the batch it predicts, and the cost of the memory collector.

    python benchmarks/memory.py                 # three model families, then the overhead pairs
    python benchmarks/memory.py --only mlp --pairs 0

Part 1 — for each model family (a wide MLP, a small CNN, an embedding + LSTM), in a fresh
process: the memory what-if measures the peak resident memory at batches b, 2b and 4b on the CPU,
fits a line, and predicts the peak at 8b; then the same process trains at 8b and reads the peak.
Prints predicted vs measured (target: within 15 %) and the largest batch the line allows under
the host's available memory with a 10 % margin.

Part 2 — the memory collector's cost: fits of many short epochs with ``memory=True`` and
``memory=False`` in alternating pairs; prints the median ratio of their epoch times (it reads the
process's memory twice an epoch).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FAMILIES = {"mlp": 256, "cnn": 64, "lstm": 64}  # family → the batch b


def build(family: str):  # type: ignore[no-untyped-def]
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    if family == "mlp":
        model = keras.Sequential(
            [
                keras.Input((64,)),
                keras.layers.Dense(8192, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
        x = rng.normal(size=(64, 64)).astype("float32")
    elif family == "cnn":
        model = keras.Sequential(
            [
                keras.Input((32, 32, 3)),
                keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
                keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
                keras.layers.GlobalAveragePooling2D(),
                keras.layers.Dense(10),
            ]
        )
        x = rng.normal(size=(64, 32, 32, 3)).astype("float32")
    else:
        model = keras.Sequential(
            [
                keras.Input((128,)),
                keras.layers.Embedding(5000, 128),
                keras.layers.LSTM(256),
                keras.layers.Dense(10),
            ]
        )
        x = rng.integers(0, 5000, size=(64, 128)).astype("int32")
    y = rng.integers(0, 10, size=(64,))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, x, y


def one_family(family: str) -> dict:  # type: ignore[type-arg]
    """In this process: the what-if at b, 2b, 4b, then a run at 8b (the line's prediction)."""
    from advisor.experiments.memory import measure_batch_memory
    from advisor.experiments.memory.batch import Peaks, peak_at
    from advisor.probes.memory import HostMemory

    batch = FAMILIES[family]
    model, x, y = build(family)
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    t0 = time.perf_counter()
    result = measure_batch_memory(
        model, (x, y), batch, backend=os.environ.get("KERAS_BACKEND"), check=False
    )
    seconds = time.perf_counter() - t0
    target = 8 * batch
    measured = peak_at(model, (x, y), target, Peaks(None, HostMemory()), 3)
    predicted = result.predict(target)
    return {
        "family": family,
        "points": [(p.batch, round(p.peak_bytes / 2**20)) for p in result.points],
        "per_sample_kb": round((result.per_sample_bytes or 0) / 1024, 1),
        "largest_batch": result.largest_batch,
        "check_batch": target,
        "predicted_mb": round((predicted or 0) / 2**20),
        "measured_mb": round((measured or 0) / 2**20),
        "error": (measured - predicted) / predicted if predicted and measured else None,
        "whatif_seconds": round(seconds, 1),
    }


def overhead(pairs: int) -> list[float]:
    import keras
    import numpy as np

    import advisor

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2048, 32)).astype("float32"), rng.integers(0, 10, 2048)
    ratios = []
    with tempfile.TemporaryDirectory() as runs:
        for _ in range(pairs):
            times = {}
            for memory in (True, False):
                model = keras.Sequential(
                    [keras.Input((32,)), keras.layers.Dense(64), keras.layers.Dense(10)]
                )
                model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                cb = advisor.AdvisorCallback(
                    runs_dir=runs, baseline=None, whatif=None, memory=memory, telemetry=False
                )
                t0 = time.perf_counter()
                model.fit(x, y, batch_size=64, epochs=40, verbose=0, callbacks=[cb])
                times[memory] = time.perf_counter() - t0
            ratios.append(times[True] / times[False])
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=list(FAMILIES))
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--family", help=argparse.SUPPRESS)  # the child process's one family
    args = parser.parse_args()
    if args.family:
        print(json.dumps(one_family(args.family)))
        return
    print(
        "| family | peaks at b, 2b, 4b (MB) | KB/sample | largest batch (host, 10 % margin) "
        "| at 8b: predicted → measured MB | error | what-if s |"
    )
    print("|---|---|---|---|---|---|---|")
    for family in args.only:
        done = subprocess.run(
            [sys.executable, __file__, "--family", family],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        error = f"{r['error']:+.1%}" if r["error"] is not None else "n/a"
        print(
            f"| {family} | {r['points']} | {r['per_sample_kb']} | {r['largest_batch']:,} | "
            f"{r['check_batch']}: {r['predicted_mb']} → {r['measured_mb']} | {error} | "
            f"{r['whatif_seconds']} |"
        )
    if args.pairs:
        ratios = overhead(args.pairs)
        print(
            f"memory=True ÷ memory=False, 40-epoch fits, median of {len(ratios)} pairs: "
            f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}–{max(ratios):.3f})"
        )


if __name__ == "__main__":
    main()
