"""How steady a ~2 ms training step is from one fit to the next on this machine.

    python benchmarks/fast_step_spread.py [--fits 8] [--epochs 60] [--fix cache_map]

Trains one model, in one process, on benchmarks/whatif.py's ``input_bound`` pipeline with a fix
applied (by default the cache, which leaves a ~2 ms compute step), ``--fits`` times in a row.
For each fit it prints the samples/s from the first epoch's end to the last's (every epoch
boundary included), the fastest and slowest stretch of ten consecutive epochs within it (the
median epoch of each: how far the speed moves within one fit), the time of a fixed pure-Python
loop just before (the CPU's own speed), and the share of CPU time the hypervisor took (steal,
from /proc/stat). The spread of the first
column is the spread any single measurement of that configuration draws from — the what-if's
and an applied run's alike — and so the precision a comparison of the two can reach.
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


def cpu_times() -> list[int]:
    """The machine's CPU time counters (/proc/stat's first line; empty elsewhere)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return []


def probe() -> float:
    """Seconds for a fixed pure-Python loop."""
    t0, total = time.perf_counter(), 0
    for i in range(3_000_000):
        total += i
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument(
        "--fix", default="cache_map", help="a fix of whatif.py's input_bound scenario"
    )
    args = parser.parse_args(argv)

    import keras
    import whatif

    scenario = whatif.input_bound()
    batch = scenario["batch"]

    class EpochEnds(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            self.ends: list[tuple[float, int]] = []
            self.steps = 0

        def on_train_batch_end(self, index: int, logs: Any = None) -> None:
            self.steps += 1

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.ends.append((time.perf_counter(), self.steps))

    model = scenario["model"]()
    rates = []
    print(
        f"| fit | {args.fix} samples/s | ten-epoch stretches, ms an epoch (min–max) "
        "| Python probe | steal |\n"
        "|---:|---:|---:|---:|---:|"
    )
    for index in range(args.fits):
        data, _ = scenario["fixes"][args.fix]()
        before, probe_s = cpu_times(), probe()
        ends = EpochEnds()
        model.fit(data, epochs=args.epochs, verbose=0, callbacks=[ends])
        after = cpu_times()
        (t0, n0), (t1, n1) = ends.ends[0], ends.ends[-1]
        rates.append((n1 - n0) * batch / (t1 - t0))
        total = sum(after) - sum(before) if before and after else 0
        steal = f"{(after[7] - before[7]) / total:.1%}" if total and len(after) > 7 else "—"
        times = [b[0] - a[0] for a, b in zip(ends.ends, ends.ends[1:], strict=False)]
        stretches = [
            statistics.median(times[i : i + 10]) * 1000 for i in range(0, len(times) - 9, 10)
        ]
        within = f"{min(stretches):.1f}–{max(stretches):.1f}" if stretches else "—"
        print(
            f"| {index + 1} | {rates[-1]:,.0f} | {within} | {probe_s * 1000:.0f} ms | {steal} |",
            flush=True,
        )
    low, high = min(rates), max(rates)
    print(
        f"\nmedian {statistics.median(rates):,.0f} samples/s, range {low:,.0f}–{high:,.0f} "
        f"({high / low:.2f}× between the slowest and the fastest fit)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
