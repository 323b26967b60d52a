"""Does the time budget add up to the fit's wall clock? Every goodput scenario, side by side.

    python benchmarks/goodput.py [--seconds 20] [--only slow_callback,healthy] [--tolerance 0.03]

Runs each scenario (examples/scenarios/, default advisor options) in a process of its own. The
scenario times its ``model.fit`` call from outside with ``time.perf_counter`` (the callbacks are
made before the clock starts) and prints it; the run's final budget record gives the advisor's
side. The table shows both, the gap between them (what the budget does not hold: Keras's work
before the callbacks' ``on_train_begin`` — building the data adapter — is outside any callback's
sight), goodput and the three largest categories. Exit 1 when a gap exceeds ``--tolerance``
(3%: the issue's target) or a scenario fails. Timings vary with the machine; the gap is a ratio
of two clocks read in the same process and should not.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent / "examples" / "scenarios"
DEFAULT = (
    "slow_callback",
    "checkpoint_every_epoch",
    "validation_dominates",
    "healthy_callbacks",
    "healthy",
)
FIT_LINE = re.compile(r"^fit: ([0-9.]+) s", re.MULTILINE)


def run_one(name: str, seconds: float, store: Path) -> tuple[float, dict]:
    env = dict(
        os.environ,
        ADVISOR_RUNS_DIR=str(store),
        ADVISOR_SCENARIO_SECONDS=str(seconds),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    done = subprocess.run(
        [sys.executable, str(SCENARIOS / name / "train.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=max(300.0, 10 * seconds),
        check=False,
    )
    found = FIT_LINE.search(done.stdout)
    if done.returncode != 0 or found is None:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        raise RuntimeError(f"{name}: exit {done.returncode}\n{tail}")
    from advisor.store.reader import RunReader, list_run_dirs
    from advisor.store.schema import BudgetRecord

    (run_dir,) = list_run_dirs(store)
    budgets = [b for b in RunReader(run_dir).read().of_type(BudgetRecord) if b.final]
    if not budgets:
        raise RuntimeError(f"{name}: the run has no final budget record")
    return float(found.group(1)), budgets[-1].model_dump()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="training time of each scenario"
    )
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    parser.add_argument(
        "--tolerance", type=float, default=0.03, help="largest gap allowed, as a share of the fit"
    )
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(DEFAULT)
    worst, failed = 0.0, []
    print(f"{'scenario':<24} {'fit s':>7} {'budget s':>9} {'gap':>6} {'goodput':>8}  largest parts")
    for name in names:
        with tempfile.TemporaryDirectory(prefix="advisor-goodput-") as folder:
            t0 = time.perf_counter()
            try:
                fit, budget = run_one(name, args.seconds, Path(folder) / "runs")
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                failed.append(name)
                print(f"{name:<24} FAILED: {exc}")
                continue
        seconds = budget["seconds"]
        accounted = sum(v for k, v in seconds.items() if k != "unaccounted")
        gap = (fit - accounted) / fit
        worst = max(worst, abs(gap))
        parts = sorted(((v, k) for k, v in seconds.items() if v > 0), reverse=True)[:3]
        text = ", ".join(f"{k} {v / budget['wall_seconds']:.0%}" for v, k in parts)
        goodput = seconds.get("train_steps", 0.0) / budget["wall_seconds"]
        print(
            f"{name:<24} {fit:7.2f} {accounted:9.2f} {gap:6.1%} {goodput:8.0%}  {text}"
            f"  ({time.perf_counter() - t0:.0f} s in all)"
        )
    print(
        f"largest gap {worst:.2%} (tolerance {args.tolerance:.0%}); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 1 if failed or worst > args.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
