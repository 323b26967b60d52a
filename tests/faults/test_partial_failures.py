"""Partial failures stay partial: an optional part of a run that cannot be read is
skipped and said while the run is still judged, and a command over a store serves the good
runs and names the bad ones — a link loop, a FIFO as run.json, a run with damaged lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fault_helpers import assert_clean, cli, lines, valid_manifest, valid_records, write_run_dir

GOOD = ("good-a", "good-b", "good-c")


def _run(store: Path, name: str, records: list[dict] | None = None, **manifest: object) -> Path:
    return write_run_dir(
        store / name,
        json.dumps(valid_manifest(run_id=name, **manifest)),
        lines(valid_records() if records is None else records),
    )


def _with_trace(summary: str = "traces/s1/advisor-summary.json") -> list[dict]:
    records = valid_records()
    records.insert(
        -1, {"type": "trace", "t": records[-1]["t"] - 0.5, "path": "traces/s1", "summary": summary}
    )
    return records


def test_a_trace_summary_linked_to_itself_is_skipped_and_the_run_judged(tmp_path):
    run = _run(tmp_path / "store", "loop", _with_trace())
    (run / "traces" / "s1").mkdir(parents=True)
    os.symlink("advisor-summary.json", run / "traces" / "s1" / "advisor-summary.json")
    result = cli("check", str(run), "--format", "json")
    assert_clean(result)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["incomplete"] == []
    assert report["facts"]["throughput.samples_per_s"]["value"] == pytest.approx(800.0)
    assert any("traces/s1/advisor-summary.json' cannot be resolved" in e for e in report["errors"])


def test_a_sweep_id_of_5000_characters_costs_only_the_sweep_link(tmp_path):
    run = _run(tmp_path / "store", "long", sweep_id="s" * 5000)
    result = cli("check", str(run))
    assert_clean(result)
    assert result.exit_code == 0
    assert (
        "note: run.json: sweep_id 'sssssssss" in result.output
        and "read without its sweep" in result.output
    )


@pytest.fixture
def mixed_store(tmp_path: Path) -> Path:
    """Three good runs beside a too-long sweep id, a link loop, a FIFO as run.json, a dangling
    link, and a run whose windows include a negative sample count."""
    store = tmp_path / "store"
    for name in GOOD:
        _run(store, name)
    _run(store, "long-sweep", sweep_id="x" * 5000)
    os.symlink("loop", store / "loop")
    (store / "fifo").mkdir()
    os.mkfifo(store / "fifo" / "run.json")
    os.symlink("gone", store / "dangling")
    damaged = valid_records()
    damaged[3]["samples"] = -800
    _run(store, "damaged", damaged)
    return store


def test_check_over_a_store_serves_the_good_runs_and_names_the_bad(mixed_store):
    result = cli("check", str(mixed_store))
    assert_clean(result)
    assert result.exit_code == 2  # documented: an unreadable run in a store
    for name in (*GOOD, "long-sweep", "damaged"):
        assert f"advisor check · run {name} " in result.output
    assert (
        "advisor: error: run fifo unreadable: run.json: not a regular file (a FIFO); refused"
        in result.output
    )
    assert "advisor: error: run loop unreadable: a link that leads nowhere" in result.output
    assert "advisor: error: run dangling unreadable: a link that leads nowhere" in result.output


def test_runs_lists_what_cannot_be_read(mixed_store):
    result = cli("--runs-dir", str(mixed_store), "runs", "--format", "json")
    assert_clean(result)
    rows = {r["run_id"]: r for r in json.loads(result.stdout)}
    assert {name for name, r in rows.items() if r["status"] == "unreadable"} == {
        "fifo",
        "loop",
        "dangling",
    }
    assert all(rows[name]["status"] == "finished" for name in GOOD)


def test_report_leaves_out_damaged_and_unreadable_runs_and_says_why(mixed_store):
    result = cli("--runs-dir", str(mixed_store), "report", "--format", "json")
    assert_clean(result)
    assert result.exit_code == 0
    table = json.loads(result.stdout)
    failures = {f["run_id"]: f["reason"] for f in table["failures"]}
    assert failures["damaged"].startswith(
        "left out: damaged data: worker-0.jsonl:4: window record: samples is negative"
    )
    assert failures["fifo"] == "unreadable: run.json: not a regular file (a FIFO); refused"
    assert failures["loop"].startswith("unreadable: a link that leads nowhere")
    kept = {run_id for row in table["rows"] for run_id in row["run_ids"]}
    assert kept == {*GOOD, "long-sweep"}


def test_a_damaged_sweep_file_is_said_and_the_run_judged(tmp_path):
    store = tmp_path / "store"
    run = _run(store, "in-sweep", sweep_id="sw1")
    (store / "sweeps" / "sw1").mkdir(parents=True)
    (store / "sweeps" / "sw1" / "sweep.json").write_text("{not json", encoding="utf-8")
    result = cli("check", str(run), "--format", "json")
    assert_clean(result)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["incomplete"] == []
    assert any(
        e.startswith(f"{store / 'sweeps' / 'sw1' / 'sweep.json'}: unreadable sweep file")
        and e.endswith("the run is read without its sweep file")
        for e in report["errors"]
    ), report["errors"]
