"""A trace summary at the size limit: the time and memory `advisor check` takes on it.

    python benchmarks/trace_summary_bound.py [--repeats 3] [--ops 800000]

Writes a run whose `advisor-summary.json` holds ``--ops`` top ops (800,000 make 61.5 MiB; with
``--fill`` the file is padded with ops up to just under the 64 MiB limit of
``advisor.store.limits``), then, in fresh processes, times (1) ``load_summary`` alone and (2)
``advisor check --format json`` on the run, reporting each one's wall and CPU time (the CPU
time says more on a shared machine) and the process's peak resident memory (``ru_maxrss``,
interpreter and imports included). Targets: < 2 s and < 500 MB for the check. The reader keeps
1,000 entries of any list (the ops with the most self time), so memory follows what is kept,
not the file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_run(folder: Path, ops: int, fill: bool) -> tuple[Path, int]:
    """A finished run with a trace record whose summary holds ``ops`` top ops."""
    from advisor.store.limits import MAX_JSON_FILE_BYTES

    t0 = time.time() - 100
    run = folder / "store" / "big-summary"
    trace = run / "traces" / "s1"
    trace.mkdir(parents=True)
    manifest = {
        "schema_version": 1,
        "run_id": "big-summary",
        "created": t0,
        "updated": t0 + 90,
        "ended": t0 + 90,
        "status": "finished",
        "global_batch_size": 32,
    }
    (run / "run.json").write_text(json.dumps(manifest))
    records = [{"type": "start", "t": t0, "rank": 0}]
    for i in range(4):
        records.append(
            {
                "type": "window",
                "t": t0 + 10 + i,
                "epoch": 0,
                "seconds": 1.0,
                "steps": 25,
                "samples": 800,
                "step_begin": 25 * i,
                "step_end": 25 * (i + 1),
                "warmup": i == 0,
            }
        )
    summary_path = "traces/s1/advisor-summary.json"
    records.append({"type": "trace", "t": t0 + 20, "path": "traces/s1", "summary": summary_path})
    records.append({"type": "end", "t": t0 + 80, "status": "finished"})
    (run / "worker-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    head = json.dumps(
        {"summary_version": 1, "hardware": "CPU_ONLY", "steps": 30, "input_percent": 12.5}
    )[:-1]
    limit = MAX_JSON_FILE_BYTES - 4096
    with open(run / summary_path, "w", encoding="utf-8") as out:
        out.write(head + ', "top_ops": [')
        written, count = len(head) + 14, 0
        while count < ops or (fill and written < limit):
            op = json.dumps(
                {
                    "name": f"op{count}",
                    "type": "MatMul",
                    "where": "host",
                    "self_time_ms": (count * 7919 % 100_000) / 100,
                }
            )
            if fill and written + len(op) + 3 > limit:
                break
            out.write((", " if count else "") + op)
            written += len(op) + 2
            count += 1
        out.write("]}")
    return run, count


CHILD_LOAD = """
import resource, sys, time
from advisor.store.trace_summary import load_summary
t, cpu = time.perf_counter(), time.process_time()
summary = load_summary(sys.argv[1], 1e6)
took, cpu = time.perf_counter() - t, time.process_time() - cpu
print(took, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(summary.top_ops))
"""

CHILD_CHECK = """
import resource, sys, time
from click.testing import CliRunner
from advisor.cli.main import cli
t, cpu = time.perf_counter(), time.process_time()
result = CliRunner().invoke(cli, ["check", sys.argv[1], "--format", "json"])
took, cpu = time.perf_counter() - t, time.process_time() - cpu
print(took, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, result.exit_code)
"""


def measure(code: str, target: Path) -> tuple[float, float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(target)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), out[3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ops", type=int, default=800_000)
    parser.add_argument("--fill", action="store_true", help="pad up to the 64 MiB limit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="advisor-bound-") as tmp:
        run, count = write_run(Path(tmp), args.ops, args.fill)
        summary = run / "traces" / "s1" / "advisor-summary.json"
        size = summary.stat().st_size / 2**20
        print(f"advisor-summary.json: {size:.1f} MiB, {count:,} top ops")
        for label, code, target in (
            ("load_summary", CHILD_LOAD, summary),
            ("advisor check", CHILD_CHECK, run),
        ):
            rows = [measure(code, target) for _ in range(args.repeats)]
            times, cpus, peaks = ([r[k] for r in rows] for k in range(3))
            print(
                f"{label:14} wall median {statistics.median(times):.2f} s "
                f"(max {max(times):.2f}), CPU median {statistics.median(cpus):.2f} s, "
                f"peak RSS median {statistics.median(peaks):.0f} MB (max {max(peaks):.0f}); "
                f"{'ops kept' if label == 'load_summary' else 'exit code'} {rows[0][3]}"
            )


if __name__ == "__main__":
    main()
