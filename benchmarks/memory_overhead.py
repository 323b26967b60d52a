"""What the memory sampling costs a fit of the overhead benchmark's shape, timed directly.

    python benchmarks/memory_overhead.py [--fits 5] [--user-callbacks 1]

``benchmarks/overhead.py`` compares whole fits with and without the advisor; its ratios scatter
by about ±1.5 % between runs on the development VM (benchmarks/RESULTS.md), far more than the
memory collector costs, so an A/B of memory=True against memory=False cannot see it (the pairs of
``benchmarks/memory.py`` read 0.95, range 0.56–1.52, on a busy host). Here the cost is timed
where it is spent, in fits of the overhead benchmark's model and size (a 2×256 MLP, batch 64,
2 epochs of 1,000 steps), with ``memory=True`` (the default):

- the memory collector's own hooks (train begin and end, each epoch's begin and end: the
  resident set, the peak and its reset, the children scan, the headroom, the device counters,
  the growth judgement and the record), timed around each call;
- the reads the goodput wrappers add around the user's callbacks' hooks (every epoch-hook call,
  one batch-hook call in 64), timed around each read, with ``--user-callbacks`` light callbacks
  (a batch and an epoch hook each, as overhead.py's ``--user-callbacks``).

Prints both per fit and as a share of the fit's wall clock, beside the overhead benchmark's
scatter. The timing wrappers add two clock reads per call (well under a microsecond).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

HOOKS = ("on_train_begin", "on_epoch_begin", "on_epoch_end", "on_train_end")
OVERHEAD_SCATTER = 0.015  # overhead.py's ratios between runs of one command (RESULTS.md)


def timed(spent: list[float], original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t0)

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000, help="steps per fit (2 epochs)")
    parser.add_argument("--user-callbacks", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    import keras
    import numpy as np

    import advisor
    from advisor.collectors import goodput_wrap
    from advisor.collectors.memory import MemoryCollector

    collector: list[float] = []
    for hook in HOOKS:
        setattr(MemoryCollector, hook, timed(collector, getattr(MemoryCollector, hook)))
    reads: list[float] = []
    goodput_wrap._rss = timed(reads, goodput_wrap._rss)  # type: ignore[attr-defined]

    class Counter(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.batches = self.epochs = 0

        def on_train_batch_end(self, batch, logs=None):  # type: ignore[no-untyped-def]
            self.batches += 1

        def on_epoch_end(self, epoch, logs=None):  # type: ignore[no-untyped-def]
            self.epochs += 1

    rng = np.random.default_rng(0)
    batch, per_epoch = 64, args.steps // 2
    x = rng.normal(size=(batch * per_epoch, 128)).astype("float32")
    y = rng.normal(size=(batch * per_epoch, 1)).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((128,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    store = tempfile.mkdtemp(prefix="advisor-bench-")
    rows = []
    for i in range(args.fits + 1):  # the first compiles: left out
        collector.clear()
        reads.clear()
        callbacks = [Counter() for _ in range(args.user_callbacks)]
        callbacks.append(
            advisor.AdvisorCallback(
                runs_dir=store, log_every_seconds=None, baseline=None, whatif=None
            )
        )
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=batch, epochs=2, callbacks=callbacks, verbose=0, shuffle=False)
        wall = time.perf_counter() - t0
        if i:
            rows.append((wall, sum(collector), len(collector), sum(reads), len(reads)))
    print(
        f"{args.fits} fits of {args.steps} steps (2 epochs), {args.user_callbacks} user "
        f"callbacks, load average {os.getloadavg()[0]:.1f}, keras {keras.backend.backend()}"
    )
    print("| fit s | collector ms (calls) | wrappers' reads ms (reads) | share of the fit |")
    print("|---:|---:|---:|---:|")
    shares = []
    for wall, spent, calls, read, n in rows:
        share = (spent + read) / wall
        shares.append(share)
        print(
            f"| {wall:.3f} | {spent * 1e3:.2f} ({calls}) | {read * 1e3:.2f} ({n}) | {share:.3%} |"
        )
    median = statistics.median(shares)
    print(
        f"median share {median:.3%}: {median / OVERHEAD_SCATTER:.0%} of the overhead "
        f"benchmark's ±{OVERHEAD_SCATTER:.1%} scatter between runs"
    )


if __name__ == "__main__":
    main()
