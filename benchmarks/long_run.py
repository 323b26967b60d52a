"""`advisor check` on a week-long run: is every derivation linear in the number of windows?

    python benchmarks/long_run.py [--windows 60000] [--repeats 5] [--samples-every 0]

Writes synthetic runs of 10 s throughput windows (a 60,000-window run is a week of training),
with an epoch every 180 windows, a context, a pipeline and a baseline record — and, with
``--samples-every S``, one GPU and one host sample every S seconds. Then, alternating in fresh
processes: ``python -c pass`` and ``advisor check RUN --format json`` on the full run and on runs
of 1/8, 1/4 and 1/2 of its windows. Linear cost shows as time per window that stays flat (the
ratio of the full run to the half run near 2, not 4). The full run is also checked as re-serialised
lines (``json.dumps`` with its spaces, as a hand-edited file). In process it also times reading the
run and deriving the facts. The target is `advisor check` under 2 s on 60,000 windows.
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


def write_run(root: Path, run_id: str, windows: int, samples_every: float = 0.0) -> Path:
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
    seconds = windows * 10
    w = RunWriter(
        root,
        run_id=run_id,
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
    step = epoch_steps = 0
    s = 0.0  # the next telemetry sample, written in time order with the windows (as a real run)
    for i in range(windows):
        while samples_every > 0 and s < 10 * (i + 1):
            w.write(
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
            w.write(
                HostSample(
                    t=t0 + s,
                    cpu_percent=[rng.uniform(50, 100) for _ in range(4)],
                    iowait=1.0,
                    mem_used=8 << 30,
                    mem_total=16 << 30,
                )
            )
            s += samples_every
        steps = 18 + rng.randint(0, 4)
        w.write(
            WindowRecord(
                t=t0 + 10 * (i + 1),
                epoch=i // 180,
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
        epoch_steps += steps
        if i % 180 == 179:  # the epoch record counts what its windows hold
            w.write(
                EpochRecord(
                    t=t0 + 10 * (i + 1),
                    epoch=i // 180,
                    seconds=1800.0,
                    train_seconds=1790.0,
                    val_seconds=10.0,
                    steps=epoch_steps,
                    samples=epoch_steps * 64,
                )
            )
            epoch_steps = 0
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


def reserialised(run: Path, root: Path) -> Path:
    """A copy of ``run`` whose lines are re-serialised with spaces (``json.dumps`` defaults), as a
    hand-edited file or another tool's rewrite would leave them: they must read as fast."""
    import json
    import shutil

    copy = root / f"{run.name}-spaced"
    shutil.copytree(run, copy)
    for file in copy.glob("worker-*.jsonl"):
        lines = file.read_bytes().splitlines()
        file.write_bytes(b"".join(json.dumps(json.loads(line)).encode() + b"\n" for line in lines))
    return copy


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=False, capture_output=True, timeout=600)
    elapsed = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def check_cmd(run: Path) -> list[str]:
    return [sys.executable, "-m", "advisor.cli.main", "check", str(run), "--format", "json"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--windows", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--samples-every",
        type=float,
        default=0.0,
        help="seconds between GPU/host samples (0: none)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [args.windows // 8, args.windows // 4, args.windows // 2, args.windows]
        t0 = time.perf_counter()
        runs = {n: write_run(Path(tmp), f"w{n}", n, args.samples_every) for n in sizes}
        wrote = time.perf_counter() - t0
        full = runs[args.windows]
        size_mb = sum(p.stat().st_size for p in full.rglob("*") if p.is_file()) / 1e6
        print(f"wrote {len(sizes)} runs in {wrote:.1f} s; the full run is {size_mb:.1f} MB")

        commands = {"python -c pass": [sys.executable, "-c", "pass"]}
        commands.update({f"advisor check, {n:,} windows": check_cmd(runs[n]) for n in sizes})
        spaced = reserialised(full, Path(tmp))
        commands[f"  the same, re-serialised ({args.windows:,})"] = check_cmd(spaced)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):  # alternate, so that machine noise hits every command alike
            for name, cmd in commands.items():
                times[name].append(timed(cmd))

        from advisor.analysis.registry import registry
        from advisor.diagnosis import load_rules
        from advisor.service import RunService
        from advisor.store.reader import RunReader

        store = RunService(full.parent)

        load_rules()
        read_s, derive_s, diagnose_s = [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run = RunReader(full).read()
            t1 = time.perf_counter()
            if run.problems:  # a synthetic run the reader doubts would time the wrong path
                raise SystemExit(f"the synthetic run reads with problems: {run.problems[:2]}")
            registry().derive(run)
            t2 = time.perf_counter()
            store.diagnose(
                run
            )  # derives again, then diagnoses: its own time is t3 - t2 less derive
            t3 = time.perf_counter()
            read_s.append(t1 - t0)
            derive_s.append(t2 - t1)
            diagnose_s.append(t3 - t2)

    print(f"\n{'what':<34} {'median':>9} {'per 1,000 windows':>18}")
    for name, values in times.items():
        median = statistics.median(values)
        n = next((s for s in sizes if name.endswith(f" {s:,} windows")), None)
        per = f"{median / n * 1000:.3f} s" if n else ""
        print(f"{name:<34} {median:>8.3f}s {per:>18}")
    half = statistics.median(times[f"advisor check, {args.windows // 2:,} windows"])
    whole = statistics.median(times[f"advisor check, {args.windows:,} windows"])
    start = statistics.median(times["python -c pass"])
    print(
        f"\nratio full / half run, minus interpreter start: {(whole - start) / (half - start):.2f}"
        " (2.0 is linear)"
    )
    print(
        f"in process, {args.windows:,} windows: read {statistics.median(read_s):.3f} s, "
        f"derive facts {statistics.median(derive_s):.3f} s, "
        f"diagnose (derive + rules) {statistics.median(diagnose_s):.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
