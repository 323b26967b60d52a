"""How long `advisor check` takes on one run, measured side by side with Python's own start-up.

    python benchmarks/check_speed.py [--repeats 7] [--hours 1]

Writes a synthetic run the size of an hour of training (10 s throughput windows, one GPU and one
host sample per second, an epoch every 3 minutes, a baseline and pipeline record), then times, in
fresh processes, alternating: `python -c pass`, `import advisor.cli.main`, and
`advisor check RUN --format json` (and `--format text`). Also times diagnose() in process.
Prints medians; the target is a `check` under 1 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def write_run(root: Path, hours: float) -> Path:
    from advisor.store.schema import (
        BaselineRecord,
        ContextRecord,
        EpochRecord,
        FirstStepRecord,
        GpuSample,
        HostSample,
        PipelineRecord,
        WindowRecord,
    )
    from advisor.store.writer import RunWriter

    rng = random.Random(0)
    seconds = int(hours * 3600)
    w = RunWriter(
        root,
        run_id="bench",
        manifest={
            "global_batch_size": 64,
            "price_per_hour": 1.006,
            "price_source": "table",
            "instance_type": "g5.xlarge",
        },
    )
    t0 = time.time() - seconds
    w.write(
        ContextRecord(
            t=t0,
            values={
                "context.run_eagerly": False,
                "context.jit_compile": False,
                "context.steps_per_execution": 1,
                "context.mixed_precision": False,
                "context.dtype_policy": "float32",
                "context.early_stopping": True,
                "context.tracking": True,
                "context.tuner": False,
                "context.profiling_configured": False,
                "context.graph_retraces": 1,
                "context.callbacks": ["AdvisorCallback", "EarlyStopping"],
            },
        )
    )
    w.write(FirstStepRecord(t=t0 + 5, seconds=5.0))
    w.write(
        PipelineRecord(
            t=t0 + 1,
            values={
                "pipeline.inspected": True,
                "pipeline.prefetch": False,
                "pipeline.sequential_maps": 1,
            },
        )
    )
    timeline: list[Any] = []  # written in time order, as a real run is
    epoch_steps: dict[int, int] = {}
    step = 0
    for i in range(seconds // 10):
        steps = 18 + rng.randint(0, 4)
        timeline.append(
            WindowRecord(
                t=t0 + 10 * (i + 1),
                epoch=i // 18,
                seconds=10.0,
                steps=steps,
                samples=steps * 64,
                step_begin=step,
                step_end=step + steps,
                warmup=i == 0,
                step_count=steps,
                step_time_mean=0.5,
                step_time_std=0.05,
                step_time_max=0.9,
                step_outliers=0,
            )
        )
        step += steps
        epoch_steps[i // 18] = epoch_steps.get(i // 18, 0) + steps
    for e in range(seconds // 180):
        timeline.append(
            EpochRecord(
                t=t0 + 180 * (e + 1),
                epoch=e,
                seconds=180.0,
                train_seconds=170.0,
                val_seconds=10.0,
                steps=epoch_steps.get(e, 0),
                samples=epoch_steps.get(e, 0) * 64,
            )
        )
    for s in range(seconds):
        timeline.append(
            GpuSample(
                t=t0 + s,
                index=0,
                util=rng.uniform(10, 60),
                mem_used=8 << 30,
                mem_total=24 << 30,
                power_w=rng.uniform(80, 150),
                energy_j=100.0 * s,
            )
        )
        timeline.append(
            HostSample(
                t=t0 + s,
                cpu_percent=[rng.uniform(50, 100) for _ in range(4)],
                iowait=1.0,
                mem_used=8 << 30,
                mem_total=16 << 30,
            )
        )
    for record in sorted(timeline, key=lambda r: r.t):
        w.write(record)
    w.write(
        BaselineRecord(
            t=t0 + seconds,
            steps=50,
            batch_size=64,
            real_samples_per_s=118.0,
            cached_samples_per_s=629.0,
            data_only_samples_per_s=121.0,
        )
    )
    w.close()
    return w.path


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=False, capture_output=True, timeout=120)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp), args.hours)
        size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import advisor.cli.main": [sys.executable, "-c", "import advisor.cli.main"],
            "advisor check --format json": [
                sys.executable,
                "-m",
                "advisor.cli.main",
                "check",
                str(run),
                "--format",
                "json",
                "--exit-zero",
            ],
            "advisor check (text)": [
                sys.executable,
                "-m",
                "advisor.cli.main",
                "check",
                str(run),
                "--exit-zero",
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):  # alternate, so that machine noise hits every command alike
            for name, cmd in commands.items():
                times[name].append(timed(cmd))

        from advisor.analysis.registry import NO_CONTEXT, registry
        from advisor.diagnosis import load_rules
        from advisor.service import RunService
        from advisor.store.reader import RunReader

        load_rules()
        inproc = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            RunService(run.parent).diagnose(run)
            inproc.append(time.perf_counter() - t0)
        # Where one diagnosis spends its time: reading, each fact area, then rules + rendering.
        parts: dict[str, float] = {}
        t0 = time.perf_counter()
        loaded = RunReader(run).read()
        parts["read the run"] = time.perf_counter() - t0
        facts: dict = {}
        for area, derive in registry()._derivers:
            t0 = time.perf_counter()
            facts.update(derive(loaded, facts, NO_CONTEXT))
            parts[f"facts: {area}"] = time.perf_counter() - t0
        from advisor.diagnosis.engine import diagnose_facts
        from advisor.diagnosis.report import RunInfo
        from advisor.render import render

        t0 = time.perf_counter()
        render(diagnose_facts(facts, load_rules(), run=RunInfo(run_id="bench")), "text")
        parts["rules + text rendering"] = time.perf_counter() - t0

    print(f"run: {args.hours:g} h of records, {size / 1e6:.1f} MB; {args.repeats} repeats, medians")
    print("| what | median s | min s |")
    print("|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} |")
    print(
        "| diagnose() in process (read + facts + rules) | "
        f"{statistics.median(inproc):.3f} | {min(inproc):.3f} |"
    )
    print("breakdown of one in-process diagnosis:")
    for name, seconds in parts.items():
        if seconds >= 0.005:
            print(f"  {name}: {seconds:.3f} s")
    check = statistics.median(times["advisor check --format json"])
    print(f"target: advisor check < 1 s → {'ok' if check < 1.0 else 'MISSED'} ({check:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
