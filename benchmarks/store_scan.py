"""`advisor runs` over a 1,000-run store: plain runs against runs grouped in sweeps.

Builds two synthetic stores through the real RunWriter — 1,000 plain runs, and 1,000 runs in
200 sweeps of 5 configurations — then, side by side and alternating:

- times ``advisor runs --limit 0 --format json`` as a subprocess (the whole command);
- counts, in process, how often each run directory is read (``RunReader.read``) by one
  ``RunService.runs()``: every run must be read exactly once, sweeps or not.

Target: the sweep store within 1.5× of the plain store. Run: ``python benchmarks/store_scan.py``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from advisor.store.schema import EpochRecord, WindowRecord
from advisor.store.writer import RunWriter

EPOCHS = 3
STEPS = 100


def write_run(root: Path, run_id: str, sweep_id: str | None, strategy: str, workers: int) -> None:
    manifest = {
        "sweep_id": sweep_id,
        "strategy": "MirroredStrategy",
        "replicas": workers,
        "price_per_hour": 1.0,
        "tags": {"scale.strategy": strategy, "scale.workers": str(workers)} if sweep_id else {},
    }
    writer = RunWriter(root, run_id, manifest=manifest)
    t = time.time() - 100.0
    for epoch in range(EPOCHS):
        seconds = 10.0 / workers
        t += seconds
        writer.write(
            WindowRecord(
                t=t,
                epoch=epoch,
                seconds=seconds,
                steps=STEPS,
                samples=STEPS * 64,
                step_begin=epoch * STEPS,
                step_end=(epoch + 1) * STEPS,
                step_count=STEPS,
                step_time_mean=seconds / STEPS,
                step_time_std=0.0,
                step_time_max=seconds / STEPS,
            )
        )
        writer.write(
            EpochRecord(
                t=t,
                epoch=epoch,
                seconds=seconds,
                train_seconds=seconds,
                steps=STEPS,
                samples=STEPS * 64,
            )
        )
    writer.close("finished")


def build(root: Path, runs: int, sweep_size: int) -> None:
    for i in range(runs):
        if sweep_size > 1:
            sweep, point = divmod(i, sweep_size)
            write_run(root, f"s{sweep:04d}-n{2**point}", f"s{sweep:04d}", "mirrored", 2**point)
        else:
            write_run(root, f"r{i:05d}", None, "single", 1)


def timed_cli(root: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "--runs-dir",
            str(root),
            "runs",
            "--limit",
            "0",
            "--format",
            "json",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return time.perf_counter() - t0


def reads_per_run(root: Path) -> Counter[str]:
    """How many times one ``RunService.runs()`` reads each run directory."""
    from advisor.service import RunService
    from advisor.store import reader

    counts: Counter[str] = Counter()
    original = reader.RunReader.read

    def counting(self: reader.RunReader) -> reader.Run:
        counts[self.path.name] += 1
        return original(self)

    reader.RunReader.read = counting  # type: ignore[method-assign]
    try:
        rows = RunService(root).runs()
    finally:
        reader.RunReader.read = original  # type: ignore[method-assign]
    assert len(rows) == len(counts), (len(rows), len(counts))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--sweep-size", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        plain, swept = Path(tmp) / "plain", Path(tmp) / "sweeps"
        t0 = time.perf_counter()
        build(plain, args.runs, 1)
        build(swept, args.runs, args.sweep_size)
        print(f"built two stores of {args.runs} runs in {time.perf_counter() - t0:.1f} s")
        times: dict[str, list[float]] = {"plain": [], "sweeps": []}
        for _ in range(args.repeats):  # alternate, so machine noise hits both alike
            times["plain"].append(timed_cli(plain))
            times["sweeps"].append(timed_cli(swept))
        reads = {"plain": reads_per_run(plain), "sweeps": reads_per_run(swept)}
    print(f"\n| store ({args.runs} runs) | `advisor runs` median | min | reads per run (min–max) |")
    print("|---|---:|---:|---:|")
    for name in ("plain", "sweeps"):
        counts = reads[name].values()
        print(
            f"| {name} | {statistics.median(times[name]):.2f} s | {min(times[name]):.2f} s | "
            f"{min(counts)}–{max(counts)} |"
        )
    ratio = statistics.median(times["sweeps"]) / statistics.median(times["plain"])
    print(f"\nsweeps ÷ plain: {ratio:.2f} (target ≤ 1.5)")
    return 0 if ratio <= 1.5 and max(reads["sweeps"].values()) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
