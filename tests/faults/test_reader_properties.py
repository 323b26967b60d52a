"""Property tests: any run directory — mutated values, truncation, garbage — gives `advisor
check`, `show` and `runs` a result or a clean one-line error within a time limit: a documented
exit code, never an internal error, a traceback or a hang.

The deep fuzzer (`test_many_*`, slow) draws a fifth of its 400 examples in the suite's run,
the same ones every run (the `replay` profile); `ADVISOR_HYPOTHESIS=explore` draws all
400 anew, `ADVISOR_FUZZ_EXAMPLES=N` draws N (tests/faults/fault_helpers.py)."""

from __future__ import annotations

import json
import random

import pytest
from fault_helpers import (
    assert_clean,
    assert_one_clear_line,
    cli,
    examples,
    fuzz_examples,
    lines,
    time_limit,
    valid_manifest,
    valid_records,
    write_run_dir,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.errors import AdvisorError
from advisor.store.reader import RunReader

# JSON tokens that broke readers: huge and non-finite numbers, deep nesting, lone surrogates.
NASTY = [
    "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1e308", "1e-400", "-0.0",
    str(2**63), str(2**64), "-" + str(2**70), "1" + "0" * 30, "9" * 5000,
    "[" * 3000 + "]" * 3000, "[" * 40 + "]" * 40, '{"a":' * 100 + "1" + "}" * 100,
    '"\\ud800"', '"run\\udfff"', '"\\ud83d\\ude00"', '""', '"x"', '"' + "x" * 20000 + '"',
    "null", "true", "false", "{}", "[]", "0", "-1", "3.5", '"../../etc/passwd"', '"/etc/passwd"',
]  # fmt: skip

MANIFEST_KEYS = [
    "schema_version",
    "run_id",
    "created",
    "updated",
    "ended",
    "status",
    "pid",
    "num_workers",
    "global_batch_size",
    "price_per_hour",
    "tags",
    "config",
    "scope",
    "framework",
    "host",
    "name",
]
RECORD_KEYS = [
    "type",
    "t",
    "epoch",
    "seconds",
    "steps",
    "samples",
    "step_begin",
    "step_end",
    "warmup",
    "step_count",
    "step_time_mean",
    "values",
    "status",
    "pid",
    "rank",
    "dropped_records",
    "path",
    "summary",
    "level",
    "source",
    "message",
]

token = (
    st.sampled_from(NASTY)
    | st.integers().map(str)
    | st.floats(allow_nan=False).map(repr)
    | st.text(max_size=20).map(json.dumps)
)


def _with(document: dict, key: str, raw: str) -> str:
    """``document`` as JSON with ``key`` set to the raw JSON text ``raw``."""
    placeholder = "\x00PLACEHOLDER\x00"
    return json.dumps({**document, key: placeholder}).replace(json.dumps(placeholder), raw)


@st.composite
def mutated_runs(draw: st.DrawFn) -> tuple[str, str]:
    """(manifest text, worker file text) of a valid run with a few mutations."""
    manifest = valid_manifest()
    records = valid_records()
    manifest_text = json.dumps(manifest)
    record_lines = [json.dumps(r) for r in records]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["manifest", "record", "record", "garbage", "truncate", "drop"]))
        if op == "manifest":
            try:
                doc = json.loads(manifest_text)
            except (ValueError, RecursionError):
                doc = {}
            if not isinstance(doc, dict):
                doc = {}
            manifest_text = _with(doc, draw(st.sampled_from(MANIFEST_KEYS)), draw(token))
        elif op == "record":
            i = draw(st.integers(0, len(record_lines) - 1))
            try:
                doc = json.loads(record_lines[i])
            except (ValueError, RecursionError):
                doc = {}
            if not isinstance(doc, dict):
                doc = {}
            record_lines[i] = _with(doc, draw(st.sampled_from(RECORD_KEYS)), draw(token))
        elif op == "garbage":
            i = draw(st.integers(0, len(record_lines)))
            record_lines.insert(i, draw(st.sampled_from(NASTY) | st.text(max_size=40)))
        elif op == "drop" and record_lines:
            record_lines.pop(draw(st.integers(0, len(record_lines) - 1)))
    worker_text = "".join(line + "\n" for line in record_lines)
    if draw(st.booleans()) and worker_text:  # a write cut short anywhere
        worker_text = worker_text[: draw(st.integers(0, len(worker_text)))]
    return manifest_text, worker_text


def _check_all(root, run) -> None:
    with time_limit(20):
        try:
            read = RunReader(run).read()
        except AdvisorError as exc:
            assert_one_clear_line(exc, names=run)  # a clean, typed error naming the run
        else:  # a run, with the records that survived: never more lines than the worker file has
            kept = sum(len(records) for records in read.records.values())
            assert kept <= sum(path.read_bytes().count(b"\n") + 1 for path in run.glob("*.jsonl"))
        for args in (
            ["check", str(run)],
            ["check", str(root)],
            ["show", str(run)],
            ["--runs-dir", str(root), "runs"],
            ["--runs-dir", str(root), "runs", "--format", "json"],
        ):
            assert_clean(cli(*args))


@settings(max_examples=examples(40))
@given(case=mutated_runs())
def test_any_mutated_run_gives_a_result_or_a_clean_error(case, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    run = write_run_dir(root / "fuzz", *case)
    _check_all(root, run)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(400))
@given(case=mutated_runs())
def test_many_mutated_runs(case, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    run = write_run_dir(root / "fuzz", *case)
    _check_all(root, run)


@settings(max_examples=examples(30))
@given(data=st.binary(max_size=400), cut=st.integers(0, 2000))
def test_random_bytes_in_a_worker_file(data, cut, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    good = lines(valid_records()).encode()
    run = write_run_dir(root / "fuzz", json.dumps(valid_manifest()), good[:cut] + data + good[cut:])
    _check_all(root, run)


def test_a_thousand_random_mutations_keep_the_untouched_records(tmp_path):
    """Damage stays local: a bad line costs that line, the records around it are all kept."""
    rng = random.Random(7)
    records = valid_records()
    for i in range(200):
        bad = rng.randrange(1, len(records))
        text = [json.dumps(r) for r in records]
        text[bad] = rng.choice(NASTY[:13])
        run = write_run_dir(
            tmp_path / f"r{i}", json.dumps(valid_manifest()), "\n".join(text) + "\n"
        )
        read = RunReader(run).read()
        assert len(read.records[0]) == len(records) - 1, (bad, text[bad])
        assert f"worker-0.jsonl:{bad + 1}:" in read.problems[0]
        if bad == len(records) - 1:  # the end record: the manifest's "finished" is in doubt
            assert read.problems[1:] == [
                "worker-0.jsonl: no end record although run.json says 'finished'; "
                "its last records may be lost"
            ]
        else:
            assert len(read.problems) == 1, read.problems
