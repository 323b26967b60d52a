"""Values that cannot be true are never a figure: each impossible value of a real-looking run
makes that record (or the run) not judgeable, with one line naming the file, the line and the
field; real runs read without a doubt; a sample of range mutations of real runs is refused."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from fault_helpers import T0, assert_clean, cli, lines, valid_manifest, valid_records
from range_mutations import FAMILIES, REAL_RUNS, report, sweep

from advisor.store.json_entries import parse_json_bounded
from advisor.store.reader import RunReader
from advisor.store.trace_summary import SummaryDoubt, load_summary

SUMMARY = "traces/s/advisor-summary.json"


def _run(tmp_path: Path, records: list[dict], summary: dict | None = None, **manifest) -> Path:
    run = tmp_path / "store" / "run"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(valid_manifest(run_id="run", **manifest)))
    if summary is not None:
        (run / SUMMARY).parent.mkdir(parents=True)
        (run / SUMMARY).write_text(json.dumps(summary))
        records.insert(-1, {"type": "trace", "t": T0 - 85, "path": "traces/s", "summary": SUMMARY})
    (run / "worker-0.jsonl").write_text(lines(records))
    return run


def _check(run: Path) -> tuple[int, dict]:
    result = cli("check", str(run), "--format", "json")
    assert_clean(result)
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        (
            "samples",
            2**63 - 1,
            "samples (9223372036854775807) is more than steps × global_batch_size (25 × 32)",
        ),
        ("seconds", 0.0, "25 steps in 0 s (less than 1e-06 s a step)"),
        ("seconds", 1e-300, "25 steps in 1e-300 s (less than 1e-06 s a step)"),
        ("seconds", 1e300, "seconds (1e+300 s) is longer than the run (1299 s)"),
        ("t", T0 + 50 * 365.25 * 86_400, "t (3341880000) is 1577880001 s after the run ended"),
        ("step_count", 99, "step_count (99) is more than steps (25) + 1"),
    ],
)
def test_an_impossible_window_is_skipped_naming_its_line_and_field(tmp_path, field, value, said):
    records = valid_records()
    records[3][field] = value
    code, report = _check(_run(tmp_path, records))
    assert code == 3
    assert f"worker-0.jsonl:4: window record: {said}; line skipped" in report["incomplete"]
    assert report["facts"]["throughput.samples_per_s"]["value"] == pytest.approx(800.0)  # the rest


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_number_in_a_record_is_not_read_as_missing(tmp_path, token):
    records = valid_records()
    records[3]["step_time_mean"] = 12345.5
    run = _run(tmp_path, records)
    text = (run / "worker-0.jsonl").read_text().replace("12345.5", token)
    (run / "worker-0.jsonl").write_text(text)
    read = RunReader(run).read()
    assert read.problems == [
        "worker-0.jsonl:4: window record: step_time_mean is not a finite number; line skipped"
    ]


@pytest.mark.parametrize(
    ("manifest", "said"),
    [
        ({"price_per_hour": 0.0}, "price_per_hour (0) is outside (0, 1e6] $/h"),
        ({"replicas": 10**9, "global_batch_size": 64}, "replicas (1000000000) is above 1048576"),
        (
            {"replicas": 2, "global_batch_size": 64, "per_replica_batch_size": 64},
            "global_batch_size (64) is not replicas × per_replica_batch_size (2 × 64)",
        ),
        (
            {"replicas": 128, "global_batch_size": 64},
            "replicas (128) is more than global_batch_size",
        ),
        ({"host": {"cpu_count": 0}}, "host.cpu_count (0) is outside 1…1048576"),
        ({"host": {"cpu_count": -4}}, "host.cpu_count (-4) is outside 1…1048576"),
    ],
)
def test_an_impossible_manifest_value_reads_as_unknown_and_said(tmp_path, manifest, said):
    code, report = _check(_run(tmp_path, valid_records(), **manifest))
    assert code == 3
    assert f"run.json: {said}; read as unknown" in report["incomplete"]


def test_a_price_of_zero_gives_no_cost_figure(tmp_path):
    _, report = _check(_run(tmp_path, valid_records(), price_per_hour=0.0))
    assert "cost.missing_price" in report["facts"]
    assert not [n for n in report["facts"] if n.startswith("cost.") and n != "cost.missing_price"]
    m102 = next(f for f in report["findings"] if f["code"] == "M102")
    assert m102["status"] != "pass"


def test_a_non_finite_price_token_is_said(tmp_path):
    run = _run(tmp_path, valid_records(), price_per_hour=12345.5)
    (run / "run.json").write_text((run / "run.json").read_text().replace("12345.5", "NaN"))
    code, report = _check(run)
    assert code == 3
    assert (
        "run.json: price_per_hour is not a finite number; read as unknown" in report["incomplete"]
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("input_percent", -50.0, "input_percent (-50) is outside 0…100"),
        ("input_percent", 150.0, "input_percent (150) is outside 0…100"),
        ("device_idle_percent", 1e300, "device_idle_percent (1e+300) is outside 0…100"),
        ("host_compute_percent", 1e308, "host_compute_percent (1e+308) is outside 0…100"),
        ("step_time_ms_mean", 0.0, "step_time_ms_mean (0) is not positive"),
        ("step_time_ms_mean", 1e300, "step_time_ms_mean (1e+300 ms) is longer than the run"),
        ("input_percent", "12", "invalid trace summary (input_percent"),
    ],
)
def test_an_impossible_summary_value_is_never_a_figure(tmp_path, name, value, said):
    summary = {"summary_version": 1, "steps": 30, "step_time_ms_mean": 40.0, name: value}
    code, report = _check(_run(tmp_path, valid_records(), summary))
    where = str(tmp_path / "store" / "run" / SUMMARY)
    text = json.dumps(report, ensure_ascii=False)
    assert said in text and where in text, text[:3000]
    assert not [k for k in report["facts"] if k.startswith("trace.") and "percent" in k]
    assert "could not be evaluated" not in text  # no rule ran on it (G551's number out of range)


def test_a_trace_record_whose_summary_is_the_manifest_is_skipped(tmp_path):
    records = valid_records()
    records.insert(-1, {"type": "trace", "t": T0 - 85, "path": "traces/s", "summary": "run.json"})
    code, report = _check(_run(tmp_path, records))
    assert code == 3
    assert (
        "worker-0.jsonl:8: trace record: summary ('run.json') is not a trace summary "
        "(advisor-summary.json); line skipped" in report["incomplete"]
    )


@pytest.mark.parametrize("value", [[], {}, "yes", 1])
def test_a_context_value_of_the_wrong_type_is_an_error(tmp_path, value):
    """docs/run-directory.md: a value of the wrong kind is left out and said, never coerced (an
    empty list read as False made M101 fail with no error)."""
    records = valid_records()
    records[1]["values"]["throughput.logging"] = value
    records.insert(-1, {"type": "context", "t": T0 - 86, "values": {"throughput.logging": True}})
    _, report = _check(_run(tmp_path, records))
    assert (
        f"facts.throughput: throughput.logging is {value!r}, not true or false; left out"
        in report["errors"]
    )
    m101 = next(f for f in report["findings"] if f["code"] == "M101")
    assert m101["status"] != "fail"


@pytest.mark.parametrize("run", REAL_RUNS, ids=lambda p: p.name)
def test_real_runs_read_without_a_doubt(run):
    read = RunReader(run).read()
    assert read.problems == [] and read.warnings == [] and read.status == "finished"


def test_a_sample_of_range_mutations_of_real_runs_is_never_judged_as_clean(record_property):
    """Two copies per family, the same every run (the full sweep: test_range_corpus.py); the
    copies per family are printed in the run's summary (tests/conftest.py)."""
    runs = 2 * len(FAMILIES)
    tally = sweep(runs=runs, seed=52)
    record_property("printed", "range corpus sample, seed 52:\n" + report(tally, runs))
    assert all(tally[family] == 2 for family in FAMILIES)
    assert not {k: v for k, v in tally.items() if ":clean" in k or k == "internal errors"}


def _ops_summary(path: Path, ops: int) -> None:
    body = ", ".join(
        json.dumps({"name": f"op{i}", "type": "MatMul", "where": "host", "self_time_ms": i % 997})
        for i in range(ops)
    )
    path.write_text('{"summary_version": 1, "steps": 30, "top_ops": [' + body + "]}")


def test_a_large_summary_is_read_keeping_its_largest_ops_in_bounded_memory(tmp_path):
    """100,000 top ops (7 MiB): the 1,000 with the most self time are kept, the rest counted; the
    memory the read allocates follows what is kept and one chunk (reading them all as models
    took gigabytes at the 64 MiB limit). Time is measured in benchmarks/trace_summary_bound.py."""
    path = tmp_path / "advisor-summary.json"
    _ops_summary(path, 100_000)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        summary = load_summary(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(summary.top_ops) == 1000
    largest = sorted((i % 997 for i in range(100_000)), reverse=True)[:1000]
    assert [op.self_time_ms for op in summary.top_ops] == largest
    assert summary.notes == ["top_ops: 99,000 more entries than the 1000 read"]
    assert peak < 6 * size, (peak, size)  # the text twice and one chunk; whole, 40x the file


@pytest.mark.parametrize(
    "text",
    [
        '{"top_ops": [{"name": "a"}, ',
        '{"top_ops": [1, 2 3]}',
        '{"top_ops": [' + "[" * 5000 + "]" * 5000 + "]}",
        '{"steps": 30} trailing',
    ],
)
def test_a_malformed_large_summary_is_one_line(tmp_path, text):
    path = tmp_path / "advisor-summary.json"
    path.write_text(text)
    with pytest.raises(Exception) as caught:
        load_summary(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and "Traceback" not in message


def test_bounded_parsing_gives_what_json_gives_on_small_documents():
    doc = {"a": [1, 2.5, "x", None, True], "b": {"k": [1, {"z": 2}]}, "c": "s", "d": 1.5}
    value, dropped, nonfinite = parse_json_bounded(json.dumps(doc).encode())
    assert (value, dropped, nonfinite) == (doc, {}, [])
    value, dropped, _ = parse_json_bounded(json.dumps({"a": list(range(5))}).encode(), keep=2)
    assert value == {"a": [0, 1]} and dropped == {"a": 3}
    with pytest.raises(SummaryDoubt.__mro__[1]):  # TraceError: the base of a summary's errors
        raise SummaryDoubt("x")
