"""Check a Horovod CI sweep (scripts/horovod_ci.sh): both sizes ran, the 2-worker run's
communication share comes from Horovod's own timeline, and D606 judged the compression the optimizer
really used.

    python scripts/horovod_ci_check.py RUNS_DIR SWEEP_ID REPORT_JSON [--compression fp16]
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs_dir")
    p.add_argument("sweep_id")
    p.add_argument("report")
    p.add_argument("--compression", default="fp16", help="what the example was told to use")
    args = p.parse_args(argv)

    import advisor

    problems: list[str] = []
    table = json.load(open(args.report, encoding="utf-8"))
    rows = {(r["strategy"], r["workers"]): r for r in table["rows"]}
    if table.get("failures"):
        problems.append(f"failed configurations: {table['failures']}")
    for n in (1, 2):
        if ("horovod", n) not in rows:
            problems.append(f"no horovod ×{n} row in the report")
    two = rows.get(("horovod", 2))
    store = advisor.RunService(args.runs_dir)
    if two:
        (run_id,) = two["run_ids"]
        facts = store.analyse(run_id).facts
        comm = facts.get("trace.communication_percent")
        if not (isinstance(comm, float) and 0 < comm < 100):
            problems.append(
                f"trace.communication_percent of {run_id} is {comm!r}, "
                "not a share from the timeline"
            )
        if two.get("communication_percent") != comm:
            problems.append(
                f"the report's communication {two.get('communication_percent')} "
                f"is not the run's {comm}"
            )
        summaries = store.read(run_id).trace_summaries.values()
        timeline = [
            s for s in summaries if s.xprof_properties.get("profiler") == "horovod-timeline"
        ]
        if not timeline:
            problems.append(f"{run_id} has no summary of Horovod's timeline")
        else:
            dtypes = (timeline[0].model_extra or {}).get("horovod_wire_dtypes", {})
            want = "float16" if args.compression == "fp16" else "float32"
            if set(dtypes) != {want}:
                problems.append(f"the timeline sent {dtypes}, expected only {want}")
        if facts.get("context.horovod_compression") != args.compression:
            problems.append(
                f"context.horovod_compression is {facts.get('context.horovod_compression')!r}, "
                f"not {args.compression!r} (the optimizer's)"
            )
        (d606,) = [f for f in store.diagnose(run_id, select=["D606"]).findings if f.code == "D606"]
        expected = "pass" if args.compression != "none" or comm < 15 else "fail"
        if d606.status != expected:
            problems.append(f"D606 is {d606.status} ({d606.message}), expected {expected}")
        print(
            f"horovod-ci: ×2 communication {comm:.1f}% of training time (Horovod timeline), "
            "negotiation "
            f"{(timeline[0].model_extra or {}).get('horovod_negotiate_percent', 0):.1f}%, "
            f"compression {facts.get('context.horovod_compression')}, "
            f"D606 {d606.status}: {d606.message}"
        )
    for n, row in sorted((k[1], r) for k, r in rows.items()):
        print(
            f"horovod-ci: ×{n}: epoch {row['epoch_s']:.2f} s, "
            f"{row['samples_per_s']:.0f} samples/s, speedup {row['speedup']:.2f}"
        )
    for problem in problems:
        print(f"horovod-ci: FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
