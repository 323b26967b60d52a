"""pandas frames of runs, findings, epochs and scaling tables; `advisor runs --format csv|json`."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pd = pytest.importorskip("pandas", reason="the pandas extra is not installed")

sys.path.insert(0, str(Path(__file__).parents[1] / "scaling"))
from scaling_fixtures import budget, write_run, write_sweep_runs  # noqa: E402

import advisor  # noqa: E402
from advisor.cli.main import cli  # noqa: E402
from advisor.errors import UsageError  # noqa: E402
from advisor.service import RunService  # noqa: E402


@pytest.fixture
def store_dir(tmp_path):
    root = tmp_path / "runs"
    write_sweep_runs(root)  # one sweep: six runs of five configurations, price 2 USD/h
    write_run(
        root,
        "plain-1",
        sweep_id=None,
        strategy="single",
        workers=1,
        epochs=[2.0, 1.0],
        samples_per_epoch=640,
        steps_per_epoch=10,
        tags=False,
    )
    return root


def test_runs_frame_has_a_row_per_run_with_fact_columns_and_units(store_dir):
    df = advisor.runs_frame(store_dir)
    assert len(df) == 7 and df.index.name == "run_id"
    plain = df.loc["plain-1"]
    # Two windows: 640 samples in 2 s and in 1 s.
    assert plain["throughput.samples_per_s"] == pytest.approx(1280 / 3.0)
    assert plain["run.epochs"] == 2 and plain["status"] == "finished"
    assert plain["time.epoch_s.mean"] == pytest.approx(
        1.0
    )  # the first epoch (2 s) out, as in the scaling table
    assert df.attrs["units"]["throughput.samples_per_s"] == "samples/s"
    assert df.attrs["units"]["cost.samples_per_dollar"] == "samples/$"
    assert str(df["created"].dtype).startswith("datetime64") and df.attrs["runs_dir"] == str(
        store_dir
    )
    # The sweep's runs carry their price and tags; the plain run has neither (NaN, not zero).
    sweep = df[df["sweep_id"] == "sweep-fixture"]
    assert sweep["cost.samples_per_dollar"].notna().all()
    assert pd.isna(plain["cost.samples_per_dollar"]) and pd.isna(plain["tags.scale.strategy"])
    assert set(sweep["tags.scale.strategy"]) == {
        "mirrored",
        "jax",
    }  # the fixture sweep's strategies
    # What a notebook user does next works on these columns.
    best = df.sort_values("throughput.samples_per_s", ascending=False).iloc[0]
    assert best["throughput.samples_per_s"] == df["throughput.samples_per_s"].max()


def test_runs_frame_has_goodput_nan_when_unknown_never_zero(store_dir):
    df = advisor.runs_frame(store_dir)  # no run of the fixture store has a time budget
    assert "goodput" in df.columns and df["goodput"].dtype == float and df["goodput"].isna().all()
    assert df.attrs["units"]["goodput"] == "fraction"
    write_run(
        store_dir,
        "budgeted-1",
        sweep_id=None,
        strategy="single",
        workers=1,
        epochs=[1.0, 1.0],
        samples_per_epoch=640,
        steps_per_epoch=10,
        tags=False,
        extra=[budget(0.46)],
    )
    df = advisor.runs_frame(store_dir)
    assert df.loc["budgeted-1", "goodput"] == pytest.approx(0.46)
    assert df["goodput"].dtype == float and df.drop(index="budgeted-1")["goodput"].isna().all()
    assert (df["goodput"] != 0).all()


def test_runs_frame_picks_facts_by_name_and_glob_and_names_a_typo(store_dir):
    df = advisor.runs_frame(store_dir, facts=["throughput.*", "run.status"])
    facts = [c for c in df.columns if "." in c and not c.startswith("tags.")]
    assert facts[0].startswith("throughput.") and "run.status" in facts
    assert "cost.samples_per_dollar" not in df.columns
    with pytest.raises(UsageError, match="did you mean 'throughput.samples_per_s'"):
        advisor.runs_frame(store_dir, facts=["throughput.sample_per_s"])


def test_an_unreadable_run_is_a_row_that_says_why(store_dir):
    (store_dir / "broken").mkdir()
    (store_dir / "broken" / "run.json").write_text("{not json", encoding="utf-8")
    df = advisor.runs_frame(store_dir)
    assert df.loc["broken", "status"] == "unreadable" and "run.json" in df.loc["broken", "error"]
    assert len(df) == 8


def test_findings_frame_one_row_per_finding_per_run(store_dir):
    from advisor import notebook as frames

    frames._warned_run_first.discard("findings_frame")
    df = advisor.findings_frame(runs_dir=store_dir)
    assert set(df["run_id"]) == {p.name for p in store_dir.iterdir() if (p / "run.json").is_file()}
    per_run = df.groupby("run_id").size()
    assert per_run.nunique() == 1  # every run is judged by every rule
    assert set(df["status"]) <= {"fail", "pass", "unknown", "n/a", "error"}
    report = RunService(store_dir).diagnose("plain-1")
    mine = df[df["run_id"] == "plain-1"].reset_index(drop=True)
    assert list(mine["code"]) == [f.code for f in report.findings]
    assert mine.equals(report.to_frame())
    fails = advisor.findings_frame(store_dir, "plain-1", status="fail")
    assert set(fails["status"]) <= {"fail"} and len(fails) == len(report.failures)
    with pytest.warns(
        DeprecationWarning, match="the store comes first"
    ):  # the older form: run first
        older = advisor.findings_frame("plain-1", runs_dir=store_dir, status="fail")
    assert older.equals(fails)


def test_epochs_frame_and_scaling_table_to_frame(store_dir):
    epochs = advisor.epochs_frame(store_dir, "plain-1")
    from advisor import notebook as frames

    frames._warned_run_first.discard("epochs_frame")
    with pytest.warns(
        DeprecationWarning, match="the store comes first"
    ):  # the older form: run first
        assert advisor.epochs_frame("plain-1", runs_dir=store_dir).equals(epochs)
    assert list(epochs.index) == [1, 2] and list(epochs["seconds"]) == [2.0, 1.0]
    assert (
        list(epochs["samples_per_s"]) == [320.0, 640.0] and epochs.attrs["units"]["seconds"] == "s"
    )
    table = RunService(store_dir).scaling_table("sweep-fixture")
    df = table.to_frame()
    assert len(df) == len(table.rows) and df.attrs["units"]["samples_per_s"] == "samples/s"
    for row in table.rows:
        got = df[(df["strategy"] == row.strategy) & (df["workers"] == row.workers)].iloc[0]
        assert got["epoch_s"] == pytest.approx(row.epoch_s)
        assert got["speedup"] == pytest.approx(row.speedup)


def test_runs_csv_has_the_frame_columns(store_dir):
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(store_dir), "runs", "--format", "csv", "--limit", "0"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert len(rows) == 7
    plain = next(r for r in rows if r["run_id"] == "plain-1")
    assert float(plain["throughput.samples_per_s"]) == pytest.approx(1280 / 3.0)
    assert plain["cost.samples_per_dollar"] == ""  # not measured: empty, never 0
    frame = pd.read_csv(io.StringIO(result.output))
    assert list(frame.columns) == list(advisor.runs_frame(store_dir).columns)


def test_runs_json_with_facts(store_dir):
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(store_dir), "runs", "--format", "json", "--facts", "time.*"]
    )
    assert result.exit_code == 0, result.output
    plain = next(r for r in json.loads(result.output) if r["run_id"] == "plain-1")
    assert (
        plain["facts"]["time.epoch_s.mean"] == pytest.approx(1.0)
        and plain["facts"]["time.first_epoch_s"] == 2.0
    )
    bad = CliRunner().invoke(
        cli, ["--runs-dir", str(store_dir), "runs", "--format", "csv", "--facts", "nope.*"]
    )
    assert bad.exit_code == 2 and "no fact matches" in bad.output
