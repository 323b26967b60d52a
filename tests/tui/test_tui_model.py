"""The TUI's headless parts: run filters and sorting, comparison, finding filters and gains, and
the service's listing, digests and target resolution, on the fixture store."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.diagnosis.report import Report
from advisor.errors import RunNotFoundError
from advisor.service import RunService
from advisor.service.listing import digest, entries, resolve_target
from advisor.tui.model import (
    FindingFilter,
    RunFilter,
    RunView,
    compare,
    counts,
    measured_best,
    measured_gains,
    sort_views,
)


@pytest.fixture
def views(store: Path) -> list[RunView]:
    s = RunService(store)
    return [
        RunView(row, digest(s, row.path) if row.status != "unreadable" else None)
        for row in entries(s)
    ]


def by_id(views: list[RunView]) -> dict[str, RunView]:
    return {v.row.run_id: v for v in views}


def test_entries_come_from_manifests_and_name_the_corrupt_run(store):
    s = RunService(store)
    rows = {r.run_id: r for r in entries(s)}
    assert len(rows) == 10
    assert (
        rows["sweep-fixture-mirrored-n4-r0"].strategy == "mirrored"
    )  # the sweep's label, not MirroredStrategy
    assert rows["sweep-fixture-mirrored-n4-r0"].workers == 4
    assert rows["run-priced"].tags == {"team": "vision"}
    assert not s._runs, "a listing reads manifests only"
    assert rows["run-corrupt"].status == "unreadable" and "run-corrupt/run.json" in (
        rows["run-corrupt"].error or ""
    )
    bad = digest(s, rows["run-corrupt"].path)
    assert bad.status == "unreadable" and "run-corrupt/run.json" in (bad.error or "")


def test_digest_has_the_top_finding_and_forgets_the_run(store):
    s = RunService(store)
    d = digest(s, str(store / "run-input-bound"))
    assert d.top is not None and (d.top.code, d.top.severity) == ("C401", "error")
    # C401 and M108 (errors), M102 (no price: info) and M109 (no profile captured: info)
    assert d.failures == 4 and d.samples_per_s == pytest.approx(115.2, rel=1e-3)
    assert not s._runs and not s._analyses, "the run's records are dropped once digested"


def test_run_filter_terms(views):
    assert RunFilter.parse("") == RunFilter() and not RunFilter.parse("")
    cases = {
        "tag:team=vision": {"run-priced"},
        "tag:team=audio": set(),
        "strategy:jax": {"sweep-fixture-jax-n1-r0", "sweep-fixture-jax-n2-r0"},
        "strategy:mirrored workers:4": {"sweep-fixture-mirrored-n4-r0"},
        "status:unreadable": {"run-corrupt"},
        "C401": {"run-input-bound"},
        "sweep:sweep-fixture workers:2": {
            "sweep-fixture-mirrored-n2-r0",
            "sweep-fixture-jax-n2-r0",
        },
        'healthy "run-"': {"run-healthy"},
    }
    for query, expected in cases.items():
        found = {v.row.run_id for v in views if RunFilter.parse(query).matches(v)}
        assert found == expected, query


def test_sorting_puts_unmeasured_last_both_ways(views):
    up = [v.row.run_id for v in sort_views(views, "samples/$")]
    down = [v.row.run_id for v in sort_views(views, "samples/$", reverse=True)]
    priced = {v.row.run_id for v in views if v.samples_per_dollar is not None}
    assert set(up[: len(priced)]) == priced and set(down[: len(priced)]) == priced
    assert up[0] == "sweep-fixture-jax-n1-r0" and down[0] == "run-priced"  # 396.8 × 3600 ÷ 1.006
    speeds = [
        v.samples_per_s for v in sort_views(views, "samples/s", reverse=True) if v.samples_per_s
    ]
    assert speeds == sorted(speeds, reverse=True)


def test_comparison_shows_throughput_and_the_findings_that_differ(store):
    s = RunService(store)
    bad, good = s.diagnose("run-input-bound"), s.diagnose("run-healthy")
    cmp = compare([bad, good])
    metrics = dict(cmp.metrics)
    assert metrics["samples/s"][0] == "115.2" and metrics["samples/s"][1].startswith("608.0 (+428%")
    assert metrics["top finding"] == [
        "C401 no-prefetch-or-parallel-map",
        "—",
    ]  # healthy: infos only
    differing = {code: statuses for code, _, statuses in cmp.differing}
    assert differing["C401"] == ["fail: error", "pass"]
    assert differing["M108"] == ["fail: error", "pass"]
    assert cmp.differing[0][0] in ("C401", "M108"), "failures come first"
    assert all(len(set(s)) > 1 for _, _, s in cmp.differing)


def test_findings_filter_counts_and_what_to_enable(store):
    report = RunService(store).diagnose("run-input-bound")
    errors = [
        f.code for f in report.findings if FindingFilter(severity="error", status="fail").matches(f)
    ]
    assert errors == ["C401", "M108"]
    assert {f.section for f in report.findings if FindingFilter(section="C4").matches(f)} == {"C4"}
    assert (
        next(f.code for f in report.findings if FindingFilter(text="prefetch").matches(f)) == "C401"
    )
    c = counts(report)
    assert (c.fail, c.decided, c.total) == (4, report.coverage.decided, report.coverage.total)
    assert c.line().startswith(f"decided {c.decided}/{c.total}")
    groups = report.unknown_by_measure()  # the one grouping `advisor check` prints too
    assert groups and all(codes for _, codes in groups)
    assert any("profile" in how for how, _ in groups), (
        "no trace in the fixture: profiling is suggested"
    )
    assert [len(codes) for _, codes in groups] == sorted(
        (len(codes) for _, codes in groups), reverse=True
    )
    unknown = {f.code for f in report.findings if f.status == "unknown" and f.missing}
    assert sorted(code for _, codes in groups for code in codes) == sorted(unknown)


def test_measured_gains_come_from_the_baseline(store):
    report = RunService(store).diagnose("run-input-bound")
    finding = next(f for f in report.findings if f.code == "M108")
    gains = measured_gains(finding)
    # The same figure `advisor check` and `show` give: the paired rounds' median speedup, not a
    # ratio of the two medians (which read ×5.33 here).
    assert [(g.label, g.text) for g in gains] == [
        (
            "the input served from memory (the cached-input baseline)",
            "629.0 samples/s, measured: 5.3×",
        )
    ]
    assert report.facts["input.removed_speedup"].value == pytest.approx(5.3, abs=0.05)
    healthy = RunService(store).diagnose("run-healthy")
    assert not measured_gains(next(f for f in healthy.findings if f.code == "M101"))


def test_the_whatifs_gain_of_a_finding_is_among_its_measured_gains(tmp_path):
    from whatif_fixtures import input_bound_run

    report = RunService(tmp_path).diagnose(str(input_bound_run(tmp_path)))
    c401 = next(f for f in report.findings if f.code == "C401")
    gains = measured_gains(c401)
    assert gains[0].label == "measured"  # once: not "what-if: measured: 2.4×"
    assert (
        gains[0].text.startswith("2.4× (±") and "— parallel_map: map #1 ('decode')" in gains[0].text
    )
    assert f"    {gains[0].label}: {gains[0].text}" in _shown(report)


def _shown(report: Report) -> list[str]:
    """The lines of the text report, as `advisor show` and `check` print it."""
    from advisor.render import render

    return [line.rstrip() for line in render(report, "text", width=400).splitlines()]


def test_a_measured_ceiling_is_named_once_as_show_names_it(store):
    """The detail pane's ceiling line reads ``measured ceiling: 5.3× …``, as `advisor show` prints
    it for the same finding, not ``ceiling: measured ceiling: 5.3×``."""
    report = RunService(store).diagnose("run-input-bound")
    c402 = next(
        f for f in report.findings if f.code == "C402"
    )  # passes here: shown failing, as on C460
    assert c402.measured is not None and c402.measured.ceiling
    first = measured_gains(c402)[0]
    assert first.label == "measured ceiling" and not first.text.startswith(("measured", "ceiling"))
    failing = report.model_copy(update={"findings": [c402.model_copy(update={"status": "fail"})]})
    assert f"    {first.label}: {first.text}" in _shown(failing)


def test_measured_best_of_a_scaling_table(store):
    table = RunService(store).scaling_table("sweep-fixture")
    best = {b.goal: (b.strategy, b.workers) for b in measured_best(table)}
    assert best == {"fastest": ("mirrored", 4), "cheapest": ("mirrored", 4)}


def test_targets(store, tmp_path):
    assert resolve_target(None, store).kind == "store"
    assert resolve_target(str(store), None) == resolve_target(str(store), store)
    run = resolve_target("run-input-bound", store)
    assert run.kind == "run" and Path(run.ref or "").name == "run-input-bound"
    assert resolve_target("run-inp", store).ref == run.ref  # a unique prefix
    assert resolve_target(str(store / "run-healthy"), None).kind == "run"
    sweep = resolve_target("sweep-fixture", store)
    assert (sweep.kind, sweep.ref) == (
        "sweep",
        "sweep-fixture",
    )  # a sweep id wins over run prefixes
    by_dir = resolve_target(str(store / "sweeps" / "sweep-fixture"), None)
    assert (by_dir.kind, by_dir.ref, by_dir.runs_dir) == ("sweep", "sweep-fixture", store)
    with pytest.raises(RunNotFoundError, match="neither a runs directory nor a run or sweep"):
        resolve_target("no-such-thing", store)
    with pytest.raises(RunNotFoundError, match="matches"):
        resolve_target("run-", store)


def test_a_measured_gain_is_written_with_its_own_sign():
    """A loss is ``-5% measured``, not ``+-5%``: the one percent formatter writes the sign."""
    from advisor.diagnosis.report import Evidence, Finding

    finding = Finding(
        code="S304",
        name="source-cache",
        section="S3",
        summary="",
        status="fail",
        severity="info",
        docs="",
        message="",
        evidence=[
            Evidence(fact="input.source_cache_gain", value=0.25),
            Evidence(fact="input.prefetch_gain", value=-0.05),
        ],
    )
    assert [(g.label, g.text) for g in measured_gains(finding)] == [
        ("input.source_cache_gain", "+25% measured"),
        ("input.prefetch_gain", "-5% measured"),
    ]


def test_the_whatifs_input_served_from_memory_replaces_the_baselines(tmp_path):
    """Measured twice (the baseline's arm and the what-if's cached_input), the screen shows one
    figure for the ceiling: the what-if's, as `advisor check`'s what-if table does."""
    from whatif_fixtures import input_bound_run, whatif_record

    from advisor.store.schema import WhatIfCandidate

    record = whatif_record()
    record.candidates.append(
        WhatIfCandidate(
            name="cached_input",
            status="measured",
            label="one batch from memory",
            batch_size=32,
            rounds=[r * 30.0 for r in record.unchanged_rounds],
            steps=900,
            seconds=1.0,
        )
    )
    report = RunService(tmp_path).diagnose(str(input_bound_run(tmp_path, record)))
    m108 = next(f for f in report.findings if f.code == "M108")
    labels = [g.label for g in measured_gains(m108)]
    assert "the input served from memory (the what-if)" in labels
    assert "the input served from memory (the cached-input baseline)" not in labels
