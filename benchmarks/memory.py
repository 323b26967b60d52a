"""The memory what-if against a run at the largest batch it predicts, and the cost of the memory
collector.

    python benchmarks/memory.py                 # three model families, then the overhead pairs
    python benchmarks/memory.py --only mlp --pairs 0 --limit-mb 2000

Part 1 — for each model family (a wide MLP, a small CNN, an embedding + LSTM), in a fresh
process: the memory what-if measures the peak resident memory at batches b, 2b and 4b on the CPU,
fits a line, and predicts the largest batch whose peak stays under ``--limit-mb`` less its 10 %
margin (the what-if's own ``limit_bytes``, standing in for the host's available memory, which
here would size batches of ~20 GB); then the same process trains at that predicted batch and
reads the peak. Prints predicted vs measured (target: within 15 %) and whether the peak stayed
under the limit (and under the limit less the margin).

Part 2 — the memory collector's cost: fits of short epochs (40 steps) with ``memory=True`` and
``memory=False`` in alternating pairs; prints the median ratio of their median epoch times, and
what the collector's reads cost per epoch (it reads the process's memory twice an epoch).
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
LIMIT_MB = 1500  # the predicted batches: ~5× 4b (MLP), ~2× 4b (CNN, LSTM); safe on a shared host


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


def one_family(family: str, limit_mb: int) -> dict:  # type: ignore[type-arg]
    """In this process: the what-if at b, 2b, 4b against a limit of ``limit_mb``, then a run at
    the largest batch it predicts under that limit (less its margin)."""
    from advisor.experiments.memory import measure_batch_memory
    from advisor.experiments.memory.batch import Peaks, peak_at
    from advisor.probes.memory import HostMemory

    batch = FAMILIES[family]
    model, x, y = build(family)
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    t0 = time.perf_counter()
    result = measure_batch_memory(
        model,
        (x, y),
        batch,
        backend=os.environ.get("KERAS_BACKEND"),
        limit_bytes=limit_mb * 2**20,
        check=False,
    )
    seconds = time.perf_counter() - t0
    target = result.largest_batch or 0
    measured = peak_at(model, (x, y), target, Peaks(None, HostMemory()), 3) if target else None
    predicted = result.predict(target) if target else None
    return {
        "family": family,
        "points": [(p.batch, round(p.peak_bytes / 2**20)) for p in result.points],
        "per_sample_kb": round((result.per_sample_bytes or 0) / 1024, 1),
        "largest_batch": target,
        "predicted_mb": round((predicted or 0) / 2**20),
        "measured_mb": round((measured or 0) / 2**20),
        "error": (measured - predicted) / predicted if predicted and measured else None,
        "under_limit": bool(measured) and measured <= limit_mb * 2**20,
        "under_margin": bool(measured) and measured <= limit_mb * 2**20 * (1 - result.margin),
        "whatif_seconds": round(seconds, 1),
        "why": result.error,
    }


def overhead(pairs: int) -> tuple[list[float], float]:
    """Median epoch time with memory=True ÷ memory=False, per pair of alternating fits (the first
    epoch of each left out); and the collector's own reads per epoch, in ms."""
    import keras
    import numpy as np

    import advisor
    from advisor.probes.memory import HostMemory

    class EpochTimes(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def on_epoch_begin(self, epoch, logs=None):  # type: ignore[no-untyped-def]
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):  # type: ignore[no-untyped-def]
            if epoch > 0:
                self.times.append(time.perf_counter() - self.t0)

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64 * 40, 32)).astype("float32"), rng.integers(0, 10, 64 * 40)
    ratios = []
    with tempfile.TemporaryDirectory() as runs:
        for _ in range(pairs):
            medians = {}
            for memory in (True, False):
                model = keras.Sequential(
                    [keras.Input((32,)), keras.layers.Dense(256), keras.layers.Dense(10)]
                )
                model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                timer = EpochTimes()
                cb = advisor.AdvisorCallback(
                    runs_dir=runs, baseline=None, whatif=None, memory=memory, telemetry=False
                )
                model.fit(x, y, batch_size=64, epochs=15, verbose=0, callbacks=[timer, cb])
                medians[memory] = statistics.median(timer.times)
            ratios.append(medians[True] / medians[False])
    host = HostMemory()
    t0 = time.perf_counter()
    for _ in range(100):  # what one epoch reads: begin (rss, reset) and end (rss, peak, headroom)
        host.rss(), host.reset_peak(), host.rss(), host.peak(), host.available()
    return ratios, (time.perf_counter() - t0) * 10.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=list(FAMILIES))
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument(
        "--limit-mb",
        type=int,
        default=LIMIT_MB,
        help="the peak the predicted largest batch must stay under (with the 10 %% margin)",
    )
    parser.add_argument("--family", help=argparse.SUPPRESS)  # the child process's one family
    args = parser.parse_args()
    if args.family:
        print(json.dumps(one_family(args.family, args.limit_mb)))
        return
    print(
        "| family | peaks at b, 2b, 4b (MB) | KB/sample | largest batch under "
        f"{args.limit_mb} MB − 10 % | predicted → measured MB | error "
        f"| under {args.limit_mb} MB (− 10 %) | what-if s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for family in args.only:
        done = subprocess.run(
            [sys.executable, __file__, "--family", family, "--limit-mb", str(args.limit_mb)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        if not r["largest_batch"]:
            print(f"| {family} | {r['points']} | no prediction: {r['why']} |")
            continue
        error = f"{r['error']:+.1%}" if r["error"] is not None else "n/a"
        yes = {True: "yes", False: "NO"}
        print(
            f"| {family} | {r['points']} | {r['per_sample_kb']} | {r['largest_batch']:,} | "
            f"{r['predicted_mb']} → {r['measured_mb']} | {error} | "
            f"{yes[r['under_limit']]} ({yes[r['under_margin']]}) | {r['whatif_seconds']} |"
        )
    if args.pairs:
        ratios, per_epoch_ms = overhead(args.pairs)
        print(
            f"median epoch time, memory=True ÷ memory=False, {len(ratios)} pairs: "
            f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}–{max(ratios):.3f}); "
            f"the collector's reads: {per_epoch_ms:.2f} ms per epoch"
        )


if __name__ == "__main__":
    main()
