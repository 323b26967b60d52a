"""What an ``advisor.track`` loop's epoch end costs as the epochs add up (the run's records, the
memory reading and its growth judgement, the flush), with steps that do nothing.

    python benchmarks/track_epoch_end.py [--epochs 2000]

Before the memory growth was judged on a schedule, an epoch end cost 69 ms at epoch 500 and
grew with the epochs (every reading sorted at every epoch end); it must stay flat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2000)
    args = parser.parse_args()
    import advisor

    costs: list[float] = []
    with tempfile.TemporaryDirectory() as runs:
        with advisor.track(backend="torch", runs_dir=runs, log_every_seconds=None) as run:
            for _ in range(args.epochs):
                for _ in range(24):
                    run.step(64)
                t0 = time.perf_counter()
                run.epoch()
                costs.append(time.perf_counter() - t0)
    n = len(costs)
    for name, part in (("first 100", costs[:100]), ("middle 100", costs[n // 2 : n // 2 + 100]),
                       ("last 100", costs[-100:])):  # fmt: skip
        print(f"{name:>10}: median {1000 * statistics.median(part):.2f} ms, "
              f"max {1000 * max(part):.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
