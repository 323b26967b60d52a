"""Diagnosis accuracy on the scenario suite, with default options (examples/scenarios/).

Runs every scenario's training in its own process and its own store — ``AdvisorCallback()``
with no arguments — diagnoses the run, and scores the findings against the scenario's
``expected.toml``: recall (the rules that must fail did), precision (every finding of warning
severity or above is a true one), top-1 (the expected rule ranks first), and the rules that must
not fire. Prints one line per scenario and the totals; ``--markdown`` prints the table for
benchmarks/RESULTS.md.

    python benchmarks/diagnosis.py                       # all scenarios, one after another
    python benchmarks/diagnosis.py --only healthy tiny_batch
    python benchmarks/diagnosis.py --busy 1              # with one core kept busy, as CI is
    python benchmarks/diagnosis.py --whatif 20           # and the measured what-if ("auto", 20 s)

With ``--whatif SECONDS`` every scenario also runs ``whatif="auto"`` within that budget, and each
line shows the measured gain of its top finding's fix (or its measured ceiling, for a fix that
cannot be tried here); the totals count the scenarios whose top finding names a what-if candidate
or a ceiling and got one measured.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "scenarios"))

import suite  # noqa: E402


def _spin() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    parser.add_argument(
        "--busy", type=int, default=0, help="cores to keep busy with spin loops meanwhile"
    )
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per scenario")
    parser.add_argument(
        "--whatif",
        type=float,
        metavar="SECONDS",
        help='also run the measured what-if ("auto") within this budget in every scenario',
    )
    args = parser.parse_args(argv)
    if args.whatif:
        os.environ["ADVISOR_SCENARIO_WHATIF_SECONDS"] = str(args.whatif)

    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    scores: list[suite.Score] = []
    t0 = time.perf_counter()
    try:
        for expected in suite.scenarios(args.only):
            with tempfile.TemporaryDirectory(prefix=f"advisor-{expected.name}-") as folder:
                runs = Path(folder) / "runs"
                try:
                    seconds = suite.run(expected, runs, timeout_s=args.timeout)
                    result = suite.score(expected, suite.diagnose(runs))
                    result.seconds = seconds
                except Exception as exc:  # noqa: BLE001 — a broken scenario is a row, not a crash
                    result = suite.Score(
                        expected.name,
                        [],
                        [],
                        list(expected.must_fail),
                        [],
                        [],
                        None,
                        False if expected.top else None,
                        None,
                        0,
                        len(expected.must_fail),
                        error=str(exc).splitlines()[0],
                    )
            scores.append(result)
            print(_line(result), flush=True)
    finally:
        for p in spinners:
            p.terminate()
    total = time.perf_counter() - t0
    print(_totals(scores, total, args.busy))
    if args.whatif:
        print(_measured_totals(scores))
    if args.markdown:
        print(_markdown(scores, total, args.busy))
    return 0 if all(s.ok for s in scores) else 1


def _line(s: suite.Score) -> str:
    if s.error:
        return f"{s.name:<30} ERROR {s.error}"
    top = "—" if s.top_ok is None else ("ok" if s.top_ok else f"MISS ({s.top})")
    extra = []
    if s.missed:
        extra.append(f"missed {' '.join(s.missed)}")
    if s.unexpected:
        extra.append(f"unexpected {' '.join(s.unexpected)}")
    if s.fired_forbidden:
        extra.append(f"must-not-fire fired {' '.join(s.fired_forbidden)}")
    if s.ranked_ok is False:
        extra.append("order wrong")
    if os.environ.get("ADVISOR_SCENARIO_WHATIF_SECONDS") and s.top in WHATIF_RULES:
        extra.append(f"{s.top} {s.top_measured or 'NOT MEASURED'}")
    return (
        f"{s.name:<30} recall {s.recall_hits}/{s.recall_total}  "
        f"precision {s.precision_hits}/{len(s.flagged)}"
        f"  top-1 {top:<10} {s.seconds:5.1f} s  failed: {' '.join(s.failed[:6])}"
        + (f"  [{'; '.join(extra)}]" if extra else "")
    )


def _whatif_rules() -> frozenset[str]:
    """The codes of the default rules whose fix the what-if tries (``whatif:`` in rules/) or
    whose gain a measured ceiling bounds (``ceiling:``, for fixes that cannot be tried here)."""
    from advisor.diagnosis.rules import load_rules

    return frozenset(rule.code for rule in load_rules() if rule.whatif or rule.ceiling)


WHATIF_RULES = _whatif_rules()


def _measured_totals(scores: list[suite.Score]) -> str:
    tops = [s for s in scores if s.top in WHATIF_RULES]
    measured = [s for s in tops if s.top_measured]
    missing = [s.name for s in tops if not s.top_measured]
    unmeasured = f"; not measured: {' '.join(missing)}" if missing else ""
    return (
        f"what-if: {len(measured)}/{len(tops)} scenarios whose top finding names a fix "
        f"got it measured{unmeasured}"
    )


def _totals(scores: list[suite.Score], total: float, busy: int) -> str:
    hits = sum(s.recall_hits for s in scores)
    needed = sum(s.recall_total for s in scores)
    flagged = sum(len(s.flagged) for s in scores)
    correct = sum(s.precision_hits for s in scores)
    tops = [s for s in scores if s.top_ok is not None]
    top_ok = sum(1 for s in tops if s.top_ok)
    healthy = [s for s in scores if not s.recall_total]
    clean = all(not s.flagged for s in healthy)
    return (
        f"overall: recall {hits}/{needed} ({hits / max(needed, 1):.0%}), precision (warning+) "
        f"{correct}/{flagged} ({correct / max(flagged, 1):.0%}), top-1 {top_ok}/{len(tops)}, "
        f"healthy without warnings: {'yes' if clean else 'NO'}; "
        f"{len(scores)} scenarios in {total:.0f} s"
        f"{f' with {busy} core(s) kept busy' if busy else ''}"
    )


def _markdown(scores: list[suite.Score], total: float, busy: int) -> str:
    rows = [
        "| scenario | recall | precision (warning+) | top-1 | failed (ranked) | time |",
        "|---|---|---|---|---|---|",
    ]
    for s in scores:
        top = "—" if s.top_ok is None else ("✓" if s.top_ok else f"✗ ({s.top})")
        failed = "error: " + (s.error or "") if s.error else " ".join(s.failed[:5])
        rows.append(
            f"| {s.name} | {s.recall_hits}/{s.recall_total} | "
            f"{s.precision_hits}/{len(s.flagged)} | {top} | {failed} | {s.seconds:.0f} s |"
        )
    return "\n".join(rows) + "\n\n" + _totals(scores, total, busy)


if __name__ == "__main__":
    sys.exit(main())
