"""A local scaling sweep of examples/scaling/train.py and its report (tables + plots).

    python benchmarks/scaling_sweep.py --out docs/scaling-sample            # the committed sample
    python benchmarks/scaling_sweep.py --workers 1,2 --strategy mirrored --repeat 1 --out /tmp/s

Runs ``advisor scale`` (profiling a few steps of every run, so computation vs communication is
known), then ``advisor report`` as text, Markdown, CSV and JSON, and the plots as PNG and SVG,
into ``--out``. On a small shared CPU machine this measures the plumbing and the overheads of
each strategy, not the speedup a GPU cluster would see.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "scaling" / "train.py"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--strategy", action="append", default=None)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--samples", type=int, default=8192)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument(
        "--price-per-hour",
        type=float,
        default=1.0,
        help="illustrative USD per instance-hour for samples per dollar",
    )
    p.add_argument(
        "--gpus-per-instance",
        type=int,
        default=1,
        help="price each worker as its own instance (cost grows with N)",
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--runs-dir", type=Path, default=None, help="keep the runs here (default: temporary)"
    )
    args = p.parse_args(argv)
    strategies = args.strategy or ["mirrored", "multiworker", "jax"]
    runs = args.runs_dir or Path(tempfile.mkdtemp(prefix="advisor-scaling-"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    advisor = [sys.executable, "-m", "advisor.cli.main", "--runs-dir", str(runs)]
    scale = [
        *advisor,
        "scale",
        "--workers",
        args.workers,
        "--repeat",
        str(args.repeat),
        "--timeout",
        str(args.timeout),
        "--sweep-id",
        "sweep-sample",
        "--no-report",
    ]
    for s in strategies:
        scale += ["--strategy", s]
    scale += [
        "--",
        sys.executable,
        str(TRAIN),
        "--epochs",
        str(args.epochs),
        "--samples",
        str(args.samples),
        "--profile",
        "20,44",
    ]  # 25 marked steps: stable shares
    print("$", " ".join(scale[3:]), flush=True)
    done = subprocess.run(scale, env=env, check=False)
    args.out.mkdir(parents=True, exist_ok=True)
    report = [
        *advisor,
        "report",
        "sweep-sample",
        "--price-per-hour",
        str(args.price_per_hour),
        "--gpus-per-instance",
        str(args.gpus_per_instance),
    ]
    for fmt, name in (
        ("text", "report.txt"),
        ("md", "report.md"),
        ("csv", "report.csv"),
        ("json", "report.json"),
    ):
        subprocess.run([*report, "--format", fmt, "-o", str(args.out / name)], env=env, check=True)
    plots = args.out / "plots"
    shutil.rmtree(plots, ignore_errors=True)
    subprocess.run(
        [*report, "--format", "csv", "-o", os.devnull, "--plots", str(plots), "--svg"],
        env=env,
        check=True,
    )
    print((args.out / "report.txt").read_text())
    if args.runs_dir is None:
        shutil.rmtree(runs, ignore_errors=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
