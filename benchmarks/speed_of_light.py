"""What the speed-of-light microbenchmark costs, and how much its figures move from run to run.

    python benchmarks/speed_of_light.py [--backend tensorflow] [--runs 10]

Runs ``advisor.probes.speed_of_light.measure`` twice in each of ``--runs`` fresh processes, with
the collector's time limit: cold (the process's first matmuls: threads started, kernels traced)
and warm (as at a fit's end, where the framework has run), and prints the cost (median and
maximum seconds) and, per dtype and for the bandwidth, the median, minimum and maximum figure and
the spread (max ÷ min − 1). The numbers are
this host's: record them in RESULTS.md with the host and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, sys
import {backend}
from advisor.probes.speed_of_light import measure
from advisor.collectors.speed_of_light import MAX_SECONDS
for _ in range(2):  # cold (the process's first matmuls), then warm (as after a fit)
    print("@" + json.dumps(measure("{backend}", "cpu", max_seconds=MAX_SECONDS).to_dict()))
"""


def one(backend: str) -> list[dict]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=backend)
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(backend=backend)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [json.loads(ln[1:]) for ln in done.stdout.splitlines() if ln.startswith("@")]


def spread(values: list[float]) -> str:
    low, high = min(values), max(values)
    return (
        f"median {statistics.median(values):.4g}, min {low:.4g}, max {high:.4g}, "
        f"spread {high / low - 1:.0%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    pairs = [one(args.backend) for _ in range(args.runs)]
    print(f"{args.backend}, {args.runs} fresh processes, load {os.getloadavg()[0]:.1f}")
    for index, when in enumerate(("cold", "warm")):
        report([p[index] for p in pairs], when)
    return 0


def report(results: list[dict], when: str) -> None:
    seconds = [r["seconds"] for r in results]
    print(f"{when}: cost median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s")
    for dtype in ("float32", "bfloat16", "float16"):
        values = [r["tflops"][dtype] * 1000 for r in results if dtype in r["tflops"]]
        if values:
            print(f"  {dtype} GFLOP/s: {spread(values)}")
    bandwidth = [r["bandwidth_gbs"] for r in results if r.get("bandwidth_gbs")]
    if bandwidth:
        print(f"  bandwidth GB/s: {spread(bandwidth)}")


if __name__ == "__main__":
    raise SystemExit(main())
