"""What an epoch boundary costs in Keras training, beside the same pipeline read in a plain loop.

    python benchmarks/epoch_boundary.py [--epochs 8] [--variant base|cache_source]

The tf.data guide's staged pipeline (benchmarks/tfdata_guide.py: two generator "files", a 30 ms
map; each element is one batch) is (a) read in a plain Python loop, a new iterator per epoch,
every iterator read to its end; (b) trained with ``model.fit``; (c) read in a loop that drops
each iterator after N pulls without reading past its last element, as Keras does when it knows
the epoch's length. For each epoch it prints the time to the first element (or first step)
and, for (c), how long dropping the previous iterator took.

This is why the measured what-if (docs/whatif.md) and a fix applied in a full run can disagree
on short epochs: segments that time steps within an epoch leave out what the boundary costs,
and the boundary's cost changes with the fix (see benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

STEP_S = 0.01  # the guide's training step, in the plain loops


def dataset(variant: str) -> Any:
    from whatif import guide

    scenario = guide()
    return scenario["base"]() if variant == "base" else scenario["fixes"][variant]()[0]


def plain(variant: str, epochs: int) -> list[float]:
    data, firsts = dataset(variant), []
    for _ in range(epochs):
        t0, first = time.perf_counter(), None
        for _ in data:
            if first is None:
                first = time.perf_counter() - t0
            time.sleep(STEP_S)
        firsts.append(first or 0.0)
    return firsts


def keras_fit(variant: str, epochs: int) -> list[float]:
    import keras
    from whatif import guide

    firsts: list[float] = []

    class FirstStep(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 0:
                firsts.append(time.perf_counter() - self.t0)

    guide()["model"]().fit(dataset(variant), epochs=epochs, verbose=0, callbacks=[FirstStep()])
    return firsts


def dropped(variant: str, epochs: int, pulls: int) -> list[float]:
    data, drops, iterator = dataset(variant), [], None
    for _ in range(epochs):
        fresh = iter(data)
        t0 = time.perf_counter()
        del iterator  # the previous epoch's iterator, read `pulls` times and never past its end
        drops.append(time.perf_counter() - t0)
        iterator = fresh
        for _ in range(pulls):
            next(iterator)
            time.sleep(STEP_S)
    return drops[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument(
        "--variant", default="base", choices=["base", "cache_source", "cache_map", "parallel_map"]
    )
    args = parser.parse_args(argv)
    show = lambda values: " ".join(f"{v:.2f}" for v in values)  # noqa: E731
    print(f"variant {args.variant}, {args.epochs} epochs of 30 batches (seconds)")
    print("plain loop, first element per epoch:      ", show(plain(args.variant, args.epochs)))
    print(
        "model.fit, first step per epoch:          ", show(keras_fit(args.variant, args.epochs)[1:])
    )
    print(
        "drop after 30 pulls (Keras's epoch):      ", show(dropped(args.variant, args.epochs, 30))
    )
    print("drop after 2 pulls:                       ", show(dropped(args.variant, args.epochs, 2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
