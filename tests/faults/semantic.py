"""Semantic mutations of a valid run, and whether `advisor check` judges the result as if clean.

Unlike the syntax fuzzers beside it (garbage, deep nesting, huge numbers), every mutation here
leaves valid JSON that a careless reader would believe: a negative count, a clock that jumps
back, a line written twice or lost in the middle, a number or a boolean quoted as a string, a
manifest value that cannot be true, extra worker files, the last lines cut at a line boundary. A
mutated run is *judged as clean* when `advisor check --format json` exits 0 or 1 with no
`incomplete` reason and no `errors`, while its facts or its verdicts differ from the intact run's:
a confident, wrong diagnosis. The sweep counts those per mutation class:

    PYTHONPATH=. python tests/faults/semantic.py --runs 2000 --seed 1

``--write-corpus DIR`` keeps one run per mutation class (tests/faults/corpus/semantic/ is made
that way; test_semantic.py replays it).
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
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "support")]

from fault_helpers import cli, lines, valid_manifest, valid_records  # noqa: E402

Records = list[dict[str, Any]]
Case = tuple[dict[str, Any], Records, int]  # manifest, records of worker 0, extra worker files

COUNT_FIELDS = {
    "window": ["seconds", "steps", "samples", "step_time_mean", "step_count"],
    "epoch": ["seconds", "train_seconds", "steps", "samples"],
    "end": ["train_seconds", "dropped_records"],
}
BOOL_FIELDS = {"window": ["warmup"]}


def _pick(rng: random.Random, records: Records, types: set[str]) -> dict[str, Any]:
    return rng.choice([r for r in records if r["type"] in types])


def _count_field(rng: random.Random, records: Records) -> tuple[dict[str, Any], str]:
    """A record and one of its count or duration fields that is written (mutating an absent
    field would change nothing)."""
    record = rng.choice(
        [r for r in records if any(f in r for f in COUNT_FIELDS.get(r["type"], ()))]
    )
    return record, rng.choice([f for f in COUNT_FIELDS[record["type"]] if f in record])


def negative(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    record, name = _count_field(rng, records)
    record[name] = -abs(record.get(name) or 1) * rng.choice([1, 0.5, 3])
    if isinstance(record.get(name), float) and name in (
        "steps",
        "samples",
        "dropped_records",
        "step_count",
    ):
        record[name] = int(record[name]) or -1
    return 0


def time_back(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    record = rng.choice(records[1:])
    record["t"] = rng.choice([0, record["t"] - rng.uniform(60, 86_400), record["t"] - 1e6])
    return 0


def duplicate(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    i = rng.randrange(1, len(records))
    records.insert(rng.randrange(i, len(records) + 1), copy.deepcopy(records[i]))
    return 0


def drop(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    del records[rng.randrange(1, len(records) - 1)]  # a line in the middle: the end record stays
    return 0


def cut_end(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    del records[len(records) - rng.randint(1, 3) :]
    return 0


def quoted_number(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    record, name = _count_field(rng, records)
    record[name] = rng.choice(["nan", "NaN", "Infinity", "-1", str(record.get(name, 1)), "1e9"])
    return 0


def quoted_bool(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    if rng.random() < 0.5:
        record = _pick(rng, records, {"context"})
        record["values"]["context.run_eagerly"] = rng.choice(["no", "false", "0", "yes", 0, 1])
    else:
        record = _pick(rng, records, {"window"})
        record["warmup"] = rng.choice(["no", "false", "yes", 0, 1])
    return 0


def manifest_field(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    name, value = rng.choice(
        [
            ("price_per_hour", "nan"),
            ("price_per_hour", "Infinity"),
            ("price_per_hour", -1.0),
            ("price_per_hour", "1.0"),
            ("num_workers", 0),
            ("num_workers", "1"),
            ("global_batch_size", -32),
            ("global_batch_size", "32"),
            ("global_batch_size", 0),
            ("jit_compile", "no"),
            ("ended", 1.0),
            ("steps_per_execution", 0),
        ]
    )
    m[name] = value
    return 0


def extra_workers(rng: random.Random, m: dict[str, Any], records: Records) -> int:
    return rng.choice([1, 3, 15])


MUTATIONS: dict[str, Callable[[random.Random, dict[str, Any], Records], int]] = {
    "negative": negative,
    "time_back": time_back,
    "duplicate": duplicate,
    "drop": drop,
    "cut_end": cut_end,
    "quoted_number": quoted_number,
    "quoted_bool": quoted_bool,
    "manifest_field": manifest_field,
    "extra_workers": extra_workers,
}


def base_manifest() -> dict[str, Any]:
    """A valid manifest with the ``config`` a callback run records (its collectors at their
    defaults), so that what the callback always writes is expected."""
    return valid_manifest(config={"window_s": 1.0, "warmup_steps": 25, "collectors": None})


def mutated(kind: str, rng: random.Random) -> Case:
    manifest, records = base_manifest(), valid_records()
    extra = MUTATIONS[kind](rng, manifest, records)
    return manifest, records, extra


def write_case(case: Case, path: Path) -> Path:
    manifest, records, extra = case
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    text = lines(records)
    for rank in range(1 + extra):
        (path / f"worker-{rank}.jsonl").write_text(text, encoding="utf-8")
    return path


def outcome(run: Path) -> dict[str, Any]:
    """Exit code, incomplete reasons, errors, facts and verdicts of `advisor check RUN`."""
    result = cli("check", str(run), "--format", "json")
    exc = result.exception
    out: dict[str, Any] = {
        "code": result.exit_code,
        "internal": (
            (exc is not None and not isinstance(exc, SystemExit))
            or result.exit_code not in (0, 1, 2, 3)
            or "internal error" in result.output
            or "Traceback" in result.output
        ),
    }
    try:
        report = json.loads(result.stdout)
    except ValueError:
        return out
    out["incomplete"] = report.get("incomplete") or []
    out["errors"] = report.get("errors") or []
    out["facts"] = {
        k: v.get("value") for k, v in report.get("facts", {}).items() if not k.startswith("store.")
    }  # the store's size, not the run's
    out["verdicts"] = {f["code"]: f["status"] for f in report.get("findings", [])}
    return out


def judged_as_clean(mutant: dict[str, Any], intact: dict[str, Any]) -> bool:
    """A confident diagnosis that differs from the intact run's."""
    if mutant["code"] not in (0, 1) or mutant.get("incomplete") or mutant.get("errors"):
        return False
    return mutant.get("facts") != intact.get("facts") or mutant.get("verdicts") != intact.get(
        "verdicts"
    )


def sweep(runs: int, seed: int, kinds: list[str] | None = None) -> Counter[str]:
    rng = random.Random(seed)
    kinds = sorted(kinds or MUTATIONS)
    root = Path(tempfile.mkdtemp(prefix="advisor-semantic-"))
    try:
        intact = outcome(write_case((base_manifest(), valid_records(), 0), root / "intact" / "run"))
        assert intact["code"] in (0, 1) and not intact["incomplete"], intact
        tally: Counter[str] = Counter()
        for i in range(runs):
            kind = rng.choice(kinds)
            run = write_case(mutated(kind, rng), root / f"m{i}" / "run")
            tally[kind] += 1
            result = outcome(run)
            if judged_as_clean(result, intact):
                tally[f"{kind}:clean"] += 1
            if result["internal"]:
                tally["internal errors"] += 1
            shutil.rmtree(run.parent)
        return tally
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write-corpus", type=Path, default=None)
    parser.add_argument(
        "--kind", action="append", choices=sorted(MUTATIONS), help="with --write-corpus: only these"
    )
    args = parser.parse_args()
    if args.write_corpus:
        for kind in args.kind or sorted(MUTATIONS):
            write_case(mutated(kind, random.Random(args.seed)), args.write_corpus / kind)
        return
    tally = sweep(args.runs, args.seed)
    clean = sum(v for k, v in tally.items() if k.endswith(":clean"))
    for kind in sorted(MUTATIONS):
        print(f"{kind:16} {tally[kind]:6} runs, judged as clean {tally[kind + ':clean']:5}")
    clean_percent = 100 * clean / max(1, args.runs)
    print(
        f"{'all':16} {args.runs:6} runs, judged as clean {clean:5} ({clean_percent:.1f} %); "
        f"internal errors, tracebacks or exit codes outside 0-3: {tally['internal errors']}"
    )


if __name__ == "__main__":
    main()
