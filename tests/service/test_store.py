"""The application layer reads each run once and derives once, also across sweeps."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner
from scaling_fixtures import write_run, write_sweep_runs  # noqa: E402

from advisor.analysis import registry as registry_module  # noqa: E402
from advisor.cli.main import cli  # noqa: E402
from advisor.service import RunService  # noqa: E402
from advisor.store import reader  # noqa: E402


@pytest.fixture
def store_dir(tmp_path):
    root = tmp_path / "runs"
    write_sweep_runs(root)  # one sweep: six runs of five configurations
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


@pytest.fixture
def counted(monkeypatch):
    """Counts reads per run directory and base derivations per run."""
    reads: Counter[str] = Counter()
    derivations: Counter[str] = Counter()
    read, derive_base = reader.RunReader.read, registry_module.FactRegistry.derive_base

    def counting_read(self):
        reads[self.path.name] += 1
        return read(self)

    def counting_derive(self, run):
        derivations[run.run_id] += 1
        return derive_base(self, run)

    monkeypatch.setattr(reader.RunReader, "read", counting_read)
    monkeypatch.setattr(registry_module.FactRegistry, "derive_base", counting_derive)
    return reads, derivations


def test_runs_reads_every_run_once_in_a_store_of_sweeps(store_dir, counted):
    reads, derivations = counted
    rows = RunService(store_dir).runs()
    assert len(rows) == 7 and {r.status for r in rows} == {"finished"}
    assert set(reads.values()) == {1} and len(reads) == 7
    assert set(derivations.values()) == {1}
    # The sweep's facts were still derived against the siblings.
    facts = RunService(store_dir).analyse(store_dir / "sweep-fixture-mirrored-n4-r0").facts
    assert facts["scaling.points"] == 5


def test_show_derives_once_for_summary_and_diagnosis(store_dir, counted, monkeypatch):
    reads, derivations = counted
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(store_dir))
    result = CliRunner().invoke(cli, ["show", "plain-1"])
    assert result.exit_code == 0, result.output
    assert "plain-1" in result.output and "Summary:" in result.output
    assert reads["plain-1"] == 1 and derivations["plain-1"] == 1


def test_runs_json_lists_an_unreadable_run_and_goes_on(store_dir):
    (store_dir / "broken").mkdir()
    (store_dir / "broken" / "run.json").write_text("{not json", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(store_dir), "runs", "--format", "json", "--limit", "0"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["run_id"]: r for r in json.loads(result.output)}
    assert rows["broken"]["status"] == "unreadable" and "run.json" in rows["broken"]["error"]
    assert rows["plain-1"]["samples_per_s"] == pytest.approx(
        1280 / 3.0
    )  # two windows: 640 samples in 2 s and in 1 s


def test_the_same_run_object_serves_every_question(store_dir):
    store = RunService(store_dir)
    analysis = store.analyse("plain-1")
    assert store.read("plain-1") is analysis.run
    assert store.analyse(analysis.run) is analysis
    report = store.diagnose("plain-1")
    assert report.run.run_id == "plain-1"
