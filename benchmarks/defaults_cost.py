"""What the default measurements cost on the model-family scenarios: the share of each fit that
the cached-input baseline and the what-if took, with ``AdvisorCallback()`` and no arguments.

Runs each family's ``train.py`` (examples/scenarios/, each in its own process and store), then
reads from the run what the baseline and the what-if took (``baseline.seconds``,
``whatif.seconds``) beside the fit's training time (the script's ``fit:`` time less those two, as
they run inside ``fit``), what each decided, and the share. The defaults promise at most a tenth
of a fit of a minute or more (``experiments.settings.measurement_allowance``).

    python benchmarks/defaults_cost.py                    # every family
    python benchmarks/defaults_cost.py --only lstm_windowed_forecaster --seconds 60
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "scenarios"))

FAMILIES = (
    "image_augmentation_in_model",
    "transformer_custom_layers",
    "lstm_windowed_forecaster",
    "vae_own_train_step",
    "subclassed_numpy",
)


def measure(name: str, seconds: float | None) -> dict[str, object]:
    """Run one family into a fresh store; what the defaults took and decided."""
    from advisor.experiments.settings import measurement_allowance
    from advisor.service import RunService

    runs = Path(tempfile.mkdtemp(prefix=f"defaults-{name}-"))
    env = dict(os.environ, ADVISOR_RUNS_DIR=str(runs), TF_CPP_MIN_LOG_LEVEL="3")
    if seconds is not None:
        env["ADVISOR_FAMILY_SECONDS"] = str(seconds)
    script = ROOT / "examples" / "scenarios" / name / "train.py"
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return {"family": name, "error": " | ".join(tail)}
    found = re.search(r"fit: ([0-9.]+) s", done.stdout)
    fit_s = float(found.group(1)) if found else float("nan")
    service = RunService(runs)
    facts = service.analyse(None).facts
    baseline = float(facts.get("baseline.seconds") or 0.0)
    whatif = float(facts.get("whatif.seconds") or 0.0)
    training = fit_s - baseline - whatif
    report = service.diagnose(None)
    failures = [f.code for f in report.findings if f.status == "fail"]
    return {
        "family": name,
        "fit_s": fit_s,
        "training_s": training,
        "baseline_s": baseline,
        "whatif_s": whatif,
        "share": (baseline + whatif) / training if training > 0 else float("nan"),
        "allowance_s": measurement_allowance(training),
        "baseline": facts.get("baseline.skipped")
        or facts.get("input.bound_verdict")
        or facts.get("baseline.stopped")
        or facts.get("baseline.error")
        or "measured",
        "whatif": facts.get("whatif.best") or facts.get("whatif.skipped") or "-",
        "top": failures[0] if failures else "-",
        "wall_s": wall,
        "runs": str(runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, choices=FAMILIES)
    parser.add_argument("--seconds", type=float, default=None, help="each fit's training time")
    args = parser.parse_args()
    print(
        "| family | fit s | baseline s | what-if s | share of the fit | allowance s | "
        "baseline | what-if best | top finding |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.only or FAMILIES:
        row = measure(name, args.seconds)
        if "error" in row:
            print(f"| {name} | failed: {row['error']} |")
            continue
        print(
            f"| {name} | {row['training_s']:.1f} | {row['baseline_s']:.1f} | "
            f"{row['whatif_s']:.1f} | {row['share']:.1%} | {row['allowance_s']:.1f} | "
            f"{row['baseline']} | {row['whatif']} | {row['top']} |",
            flush=True,
        )
        print(f"<!-- {name}: {row['runs']} -->", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
