"""Copies of real runs with one value that cannot be true each, and whether `advisor check` says so.

The runs in tests/faults/corpus/real (written by real fits, ``real_runs.py``) and the real
two-worker Horovod run of tests/data are copied and given one impossible value of a family:
``huge`` (2**63-1 samples, 1e300 seconds), ``zero`` (a window of 0 or 1e-300 s, a price or a
CPU count of 0), ``negative``, ``nonfinite`` (NaN, Infinity, 1e999 as JSON tokens),
``shifted_time`` (a record 50 years after the run or before it), ``inconsistent`` (a manifest
whose global batch is not replicas × per-replica batch, more samples than steps × batch),
``self_reference`` (a trace record whose summary is run.json or a worker file), ``wrong_type``
(a context value, a manifest or summary field of the wrong JSON type) and ``percent`` (a share
outside 0…100). A copy is *judged as clean* when `advisor check --format json` exits 0 or 1 with
no incomplete reason and no error: every copy here holds a value that cannot be true, so each
must be refused (exit 2), not judgeable (exit 3) or carry an error. The sweep counts copies and
misses per family:

    PYTHONPATH=. python tests/faults/range_mutations.py --runs 10000 --seed 1
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "support")]

from semantic import outcome  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REAL_RUNS = (
    ROOT / "tests" / "faults" / "corpus" / "real" / "arrays",
    ROOT / "tests" / "faults" / "corpus" / "real" / "tfdata-profiled",
    ROOT / "tests" / "data" / "horovod" / "run-n2",
)
FIFTY_YEARS = 50 * 365.25 * 86_400
INF_MARK = 1.2345678e-299  # written, then replaced by the token 1e999 (an infinite number)


@dataclass
class Copy:
    """A run directory in memory: its manifest, worker records and trace summaries."""

    source: Path
    manifest: dict[str, Any]
    workers: dict[str, list[dict[str, Any]]]
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def records(self, kind: str) -> list[dict[str, Any]]:
        return [r for recs in self.workers.values() for r in recs if r["type"] == kind]


def load(run: Path) -> Copy:
    workers = {
        p.name: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
        for p in sorted(run.glob("worker-*.jsonl"))
    }
    summaries = {
        str(p.relative_to(run)): json.loads(p.read_text(encoding="utf-8"))
        for p in run.rglob("advisor-summary.json")
    }
    return Copy(run, json.loads((run / "run.json").read_text(encoding="utf-8")), workers, summaries)


def write(case: Copy, path: Path) -> Path:
    shutil.copytree(case.source, path)

    def dump(value: Any) -> str:
        return json.dumps(value).replace(repr(INF_MARK), "1e999")

    (path / "run.json").write_text(dump(case.manifest), encoding="utf-8")
    for name, records in case.workers.items():
        text = "".join(dump(r) + "\n" for r in records)
        (path / name).write_text(text, encoding="utf-8")
    for relative, summary in case.summaries.items():
        (path / relative).write_text(dump(summary), encoding="utf-8")
    return path


Mutation = Callable[[random.Random, Copy], str]


def _measured_window(rng: random.Random, case: Copy) -> dict[str, Any]:
    return rng.choice([r for r in case.records("window") if r["steps"] > 0])


def _summary(rng: random.Random, case: Copy) -> dict[str, Any] | None:
    return rng.choice(list(case.summaries.values())) if case.summaries else None


def _share_field(rng: random.Random, summary: dict[str, Any]) -> str:
    return rng.choice(sorted(k for k, v in summary.items() if k.endswith("_percent") and v))


def huge(rng: random.Random, case: Copy) -> str:
    summary = _summary(rng, case)
    options = ["samples", "seconds", "epoch", "first_step", "price", "replicas", "end"]
    if summary is not None:
        options += ["summary_share", "summary_step"]
    choice = rng.choice(options)
    if choice == "samples":
        _measured_window(rng, case)["samples"] = 2**63 - 1
    elif choice == "seconds":
        _measured_window(rng, case)["seconds"] = 1e300
    elif choice == "epoch":
        rng.choice(case.records("epoch"))["seconds"] = 1e300
    elif choice == "first_step":
        for record in case.records("first_step") or case.records("epoch"):
            record["seconds"] = 1e300
    elif choice == "price":
        case.manifest["price_per_hour"] = 1e300
    elif choice == "replicas":
        case.manifest["replicas"] = 10**9
        case.manifest.setdefault("global_batch_size", 64)
    elif choice == "end":
        rng.choice(case.records("end"))["train_seconds"] = 1e300
    elif choice == "summary_share" and summary is not None:
        summary[_share_field(rng, summary)] = rng.choice([1e300, 1e308])
    elif summary is not None:
        summary["step_time_ms_mean"] = 1e300
    return choice


def zero(rng: random.Random, case: Copy) -> str:
    choice = rng.choice(["window", "tiny_window", "price", "cpu_count", "batch", "train_seconds"])
    if choice == "window":
        _measured_window(rng, case)["seconds"] = 0.0
    elif choice == "tiny_window":
        _measured_window(rng, case)["seconds"] = 1e-300
    elif choice == "price":
        case.manifest["price_per_hour"] = 0.0
    elif choice == "cpu_count":
        case.manifest.setdefault("host", {})["cpu_count"] = 0
    elif choice == "batch":
        case.manifest["global_batch_size"] = 0
    else:
        rng.choice([r for r in case.records("epoch") if r["steps"] > 0])["train_seconds"] = 0.0
    return choice


def negative(rng: random.Random, case: Copy) -> str:
    summary = _summary(rng, case)
    options = ["samples", "epoch", "cpu_count", "price"] + (["summary"] if summary else [])
    choice = rng.choice(options)
    if choice == "samples":
        _measured_window(rng, case)["samples"] = -rng.choice([1, 800])
    elif choice == "epoch":
        rng.choice(case.records("epoch"))["seconds"] = -2.5
    elif choice == "cpu_count":
        case.manifest.setdefault("host", {})["cpu_count"] = -4
    elif choice == "price":
        case.manifest["price_per_hour"] = -1.0
    elif summary is not None:
        summary[_share_field(rng, summary)] = -50.0
    return choice


def nonfinite(rng: random.Random, case: Copy) -> str:
    value = rng.choice([float("nan"), float("inf"), float("-inf"), INF_MARK])
    summary = _summary(rng, case)
    choice = rng.choice(["window", "price", "epoch"] + (["summary"] if summary else []))
    if choice == "window":
        _measured_window(rng, case)[rng.choice(["seconds", "step_time_mean"])] = value
    elif choice == "price":
        case.manifest["price_per_hour"] = value
    elif choice == "epoch":
        rng.choice(case.records("epoch"))["train_seconds"] = value
    elif summary is not None:
        summary[_share_field(rng, summary)] = value
    return choice


def shifted_time(rng: random.Random, case: Copy) -> str:
    choice = rng.choice(["later", "earlier", "worker_later", "created_later"])
    if choice == "later":
        record = rng.choice([r for recs in case.workers.values() for r in recs[1:]])
        record["t"] += FIFTY_YEARS
    elif choice == "earlier":
        record = rng.choice([r for recs in case.workers.values() for r in recs])
        record["t"] = max(0.0, record["t"] - FIFTY_YEARS * rng.choice([0.01, 1]))
    elif choice == "worker_later":
        for record in rng.choice(list(case.workers.values())):
            record["t"] += FIFTY_YEARS
    else:
        case.manifest["created"] += rng.choice([86_400.0, FIFTY_YEARS])
        for name in ("updated", "ended"):
            if case.manifest.get(name) is not None:
                case.manifest[name] += FIFTY_YEARS * 1.01
    return choice


def inconsistent(rng: random.Random, case: Copy) -> str:
    m = case.manifest
    batch = m.get("global_batch_size") or 32
    choice = rng.choice(["per_replica", "replicas", "samples"])
    if choice == "per_replica":
        m.update(global_batch_size=batch, replicas=2, per_replica_batch_size=batch)
    elif choice == "replicas":
        m.update(global_batch_size=batch, replicas=batch * 2, per_replica_batch_size=None)
    else:
        m["global_batch_size"] = batch
        window = _measured_window(rng, case)
        window["samples"] = window["steps"] * batch * 3
    return choice


def self_reference(rng: random.Random, case: Copy) -> str:
    target = rng.choice(["run.json", next(iter(case.workers)), "traces", "."])
    traces = case.records("trace")
    if traces:
        rng.choice(traces)["summary"] = target
    else:
        records = next(iter(case.workers.values()))
        last = records[-1]
        records.insert(-1, {"type": "trace", "t": last["t"], "path": "traces", "summary": target})
    return target


def wrong_type(rng: random.Random, case: Copy) -> str:
    summary = _summary(rng, case)
    options = ["logging", "run_eagerly", "log_lines", "batch", "window"]
    options += ["summary_share", "summary_steps"] if summary else []
    choice = rng.choice(options)
    contexts = case.records("context")
    if choice in ("logging", "run_eagerly", "log_lines") and contexts:
        name, value = {
            "logging": ("throughput.logging", rng.choice([[], {}, "yes", 1])),
            "run_eagerly": ("context.run_eagerly", rng.choice(["no", "false", 0, [True]])),
            "log_lines": ("throughput.log_lines", rng.choice(["3", [3], True])),
        }[choice]
        contexts[0]["values"][name] = value
    elif choice == "batch" or (choice in ("logging", "run_eagerly", "log_lines")):
        case.manifest["global_batch_size"] = rng.choice(["32", [32], 32.5])
    elif choice == "window":
        _measured_window(rng, case)["seconds"] = rng.choice(["1.0", [1.0], {"s": 1.0}])
    elif choice == "summary_share" and summary is not None:
        summary[_share_field(rng, summary)] = rng.choice(["12", [12.0], True])
    elif summary is not None:
        summary["steps"] = rng.choice(["30", [30], 30.5])
    return choice


def percent(rng: random.Random, case: Copy) -> str:
    summary = _summary(rng, case)
    choice = rng.choice(["summary", "top_op", "host_core"] if summary else ["host_core"])
    if choice == "summary" and summary is not None:
        summary[_share_field(rng, summary)] = rng.choice([150.0, 100.5, 1e4])
    elif choice == "top_op" and summary is not None and summary.get("top_ops"):
        rng.choice(summary["top_ops"])["self_time_percent"] = rng.choice([150.0, -1.0])
    else:
        hosts = case.records("host")
        if hosts:
            rng.choice(hosts)["cpu_percent"] = [150.0]
        else:
            _measured_window(rng, case)["samples"] = -5
    return choice


FAMILIES: dict[str, Mutation] = {
    "huge": huge,
    "zero": zero,
    "negative": negative,
    "nonfinite": nonfinite,
    "shifted_time": shifted_time,
    "inconsistent": inconsistent,
    "self_reference": self_reference,
    "wrong_type": wrong_type,
    "percent": percent,
}


def judged_as_clean(result: dict[str, Any]) -> bool:
    """A verdict as if the run were clean, on a copy that holds an impossible value."""
    return result["code"] in (0, 1) and not result.get("incomplete") and not result.get("errors")


def sweep(runs: int, seed: int, families: list[str] | None = None) -> Counter[str]:
    """``runs`` mutated copies (families and real runs drawn by ``seed``): per family, how many
    copies, how many judged as clean (``family:clean``) and internal errors."""
    rng = random.Random(seed)
    names = sorted(families or FAMILIES)
    originals = [load(run) for run in REAL_RUNS]
    root = Path(tempfile.mkdtemp(prefix="advisor-ranges-"))
    tally: Counter[str] = Counter()
    try:
        for i in range(runs):
            family = names[i % len(names)]
            case = copy.deepcopy(rng.choice(originals))
            what = FAMILIES[family](rng, case)
            result = outcome(write(case, root / f"m{i}" / "run"))
            tally[family] += 1
            if judged_as_clean(result):
                tally[f"{family}:clean"] += 1
                tally[f"{family}:clean:{case.source.name}:{what}"] += 1
            if result["internal"]:
                tally["internal errors"] += 1
            shutil.rmtree(root / f"m{i}")
        return tally
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(tally: Counter[str], runs: int) -> str:
    lines = [
        f"{family:15} {tally[family]:6} copies, judged as clean {tally[family + ':clean']:4}"
        for family in sorted(FAMILIES)
    ]
    clean = sum(tally[f + ":clean"] for f in FAMILIES)
    lines.append(
        f"{'all':15} {runs:6} copies, judged as clean {clean:4}; internal errors, tracebacks "
        f"or exit codes outside 0-3: {tally['internal errors']}"
    )
    lines += [f"  missed: {k}" for k in sorted(tally) if k.count(":") == 3]
    return "\n".join(lines)


SHARDS = 2  # test_range_corpus.py and test_range_corpus_second.py
COPIES = 10_000  # in all, over the shards; ADVISOR_RANGE_COPIES overrides it


def check_shard(seed: int, record_property: Any) -> None:
    """One test file's share of the corpus (``COPIES`` / ``SHARDS`` copies drawn with ``seed``):
    the copies per family printed (in the run's summary: ``tests/conftest.py``), every family
    drawn, no copy judged as clean, no traceback."""
    import os

    runs = int(os.environ.get("ADVISOR_RANGE_COPIES", str(COPIES))) // SHARDS
    tally = sweep(runs=runs, seed=seed)
    record_property("printed", f"range corpus, seed {seed}:\n" + report(tally, runs))
    assert sum(tally[family] for family in FAMILIES) == runs
    assert all(tally[family] >= runs // len(FAMILIES) for family in FAMILIES)
    assert not {k: v for k, v in tally.items() if ":clean" in k or k == "internal errors"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    args = parser.parse_args()
    print(report(sweep(args.runs, args.seed, args.family), args.runs))


if __name__ == "__main__":
    main()
