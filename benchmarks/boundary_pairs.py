"""Where an applied fix's gain comes from on short epochs: within the epoch or at its boundary.

    python benchmarks/boundary_pairs.py [--pairs 3] [--epochs 8] [--fix prefetch]

Full fits of the tf.data guide's staged pipeline (benchmarks/whatif.py's ``guide`` scenario),
the base and one fix alternating, ``pairs`` times each. For every fit it prints, over the epochs
after the first: the mean epoch time, the mean time between steps inside an epoch, and each
epoch's time to its first step (the boundary: ~0.12 s, or ~1.1 s when Keras's drop of the last
epoch's iterator stalled; see benchmarks/epoch_boundary.py). Then the medians per arm. A fix
whose in-epoch step time equals the base's gains nothing the what-if could measure; a
difference in epoch time that comes only from how many boundaries stalled is the lottery of
the stall, not the fix.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def fit(arm: str, epochs: int) -> tuple[float, float, list[float]]:
    """(mean epoch s, mean in-epoch step s, first-step latencies) over the epochs after the 1st."""
    import keras
    from whatif import guide

    rows: list[tuple[float, float, float]] = []

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.t0, self.ticks = time.perf_counter(), []

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.ticks.append(time.perf_counter())

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            ticks = self.ticks
            inner = (ticks[-1] - ticks[0]) / max(1, len(ticks) - 1)
            rows.append((time.perf_counter() - self.t0, inner, ticks[0] - self.t0))

    scenario = guide()
    data = scenario["base"]() if arm == "base" else scenario["fixes"][arm]()[0]
    scenario["model"]().fit(data, epochs=epochs, verbose=0, callbacks=[Clock()])
    later = rows[1:]
    return (
        statistics.mean(r[0] for r in later),
        statistics.mean(r[1] for r in later),
        [r[2] for r in later],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--fix", default="prefetch")
    args = parser.parse_args(argv)
    results: dict[str, list[tuple[float, float, list[float]]]] = {"base": [], args.fix: []}
    for _ in range(args.pairs):
        for arm in results:
            epoch, inner, firsts = fit(arm, args.epochs)
            results[arm].append((epoch, inner, firsts))
            stalls = sum(f > 0.5 for f in firsts)
            print(
                f"{arm:20s} epoch {epoch:.3f} s  in-epoch step {inner * 1000:.1f} ms  "
                f"stalled boundaries {stalls}/{len(firsts)}  "
                f"firsts {[round(f, 2) for f in firsts]}",
                flush=True,
            )
    for arm, runs in results.items():
        print(
            f"{arm:20s} median epoch {statistics.median(r[0] for r in runs):.3f} s, in-epoch step "
            f"{statistics.median(r[1] for r in runs) * 1000:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
