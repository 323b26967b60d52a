"""The engine: evidence gating, error isolation, ranking, coverage, selection and the diagnose API."""

from __future__ import annotations

import time

import pytest

from advisor.diagnosis import diagnose_facts, evaluate, load_rules
from advisor.diagnosis.report import RunInfo
from advisor.diagnosis.selection import Layer, select_codes
from advisor.service import diagnose
from advisor.store.schema import ContextRecord, WindowRecord
from advisor.store.writer import RunWriter

RULES = {r.code: r for r in load_rules()}
RUN = RunInfo(run_id="facts-only")


def test_gated_rule_is_info_with_few_measured_steps():
    facts = {"throughput.cv": 0.4, "throughput.windows": 3}
    few = evaluate(RULES["M103"], facts, measured_steps=8)
    many = evaluate(RULES["M103"], facts, measured_steps=500)
    assert few.status == many.status == "fail"
    assert few.severity == "info" and "only 8 measured steps" in (few.note or "")
    assert many.severity == "warning" and many.note is None
    assert (
        evaluate(RULES["M103"], facts, measured_steps=8, min_measured_steps=5).severity == "warning"
    )


def test_a_failing_rule_is_an_error_entry_and_the_others_run():
    facts = {"throughput.cv": "unstable", "throughput.windows": 3, "context.run_eagerly": True}
    report = diagnose_facts(facts, [RULES["M103"], RULES["C450"]], run=RUN)
    by_code = {f.code: f for f in report.findings}
    assert by_code["M103"].status == "error" and "cannot compare" in by_code["M103"].error
    assert by_code["C450"].status == "fail"
    assert report.summary.error == 1 and report.exit_code("error") == 2


def test_ranking_severity_then_impact():
    facts = {
        "input.bound_fraction": 0.7,
        "baseline.cached_samples_per_s": 300.0,
        "baseline.real_samples_per_s": 90.0,
        "context.jit_compile": False,
        "context.tuner": False,
        "context.run_eagerly": True,
        "time.val_fraction": 0.9,
    }
    report = diagnose_facts(facts, list(RULES.values()), run=RUN)
    order = [(f.code, f.severity) for f in report.failures]
    assert order[:2] == [
        ("M108", "error"),
        ("C450", "error"),
    ]  # measured 70% beats the estimated 50%
    severities = [s for _, s in order]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    statuses = [f.status for f in report.findings]
    assert statuses == sorted(statuses, key=["fail", "error", "unknown", "n/a", "pass"].index)


def test_coverage_counts_decided_rules():
    report = diagnose_facts(
        {"context.tuner": True, "context.tracking": False},
        [RULES["P702"], RULES["P704"], RULES["M108"]],
        run=RUN,
    )
    assert (report.coverage.decided, report.coverage.total) == (2, 3)
    assert (
        report.coverage.sections["P7"].decided == 2 and report.coverage.sections["M1"].decided == 0
    )
    assert report.coverage.fraction == pytest.approx(2 / 3, abs=1e-3)


def test_unknown_says_how_to_measure():
    finding = evaluate(RULES["M108"], {})
    assert finding.status == "unknown"
    assert 'baseline="end"' in finding.measure
    assert set(finding.missing) == {
        "input.bound_fraction",
        "baseline.cached_samples_per_s",
        "baseline.real_samples_per_s",
    }
    trace = evaluate(RULES["M110"], {})
    assert "profile_steps" in trace.measure


@pytest.mark.parametrize(
    "layers,expected",
    [
        ([Layer(("ALL",))], {"C401", "C402", "G501", "M101"}),
        ([Layer(("ALL",)), Layer(None, (), ("C4",))], {"G501", "M101"}),
        (
            [Layer(("ALL",)), Layer(None, (), ("C4",)), Layer(None, ("C401",), ())],
            {"C401", "G501", "M101"},
        ),
        ([Layer(("C4",), (), ("C40",)), Layer(None, (), ())], set()),
        ([Layer(("C4",), (), ("C401",))], {"C402"}),  # the more specific ignore wins
        ([Layer(("C401",), (), ("C4",))], {"C401"}),  # the more specific select wins
        ([Layer(("C4",), (), ("C4",))], set()),  # a tie goes to ignore
        (
            [Layer(("ALL",), (), ("C4",)), Layer(("C4",))],
            {"C401", "C402"},
        ),  # a later select starts over
    ],
)
def test_selection(layers, expected):
    assert set(select_codes(["C401", "C402", "G501", "M101"], layers)) == expected


def test_diagnose_api_on_a_run(tmp_path):
    w = RunWriter(tmp_path, run_id="api", manifest={"global_batch_size": 16})
    w.write(
        ContextRecord(t=time.time(), values={"context.run_eagerly": True, "context.tuner": False})
    )
    for i in range(3):
        w.write(
            WindowRecord(
                t=time.time(),
                epoch=0,
                seconds=1.0,
                steps=10,
                samples=160,
                step_begin=i * 10,
                step_end=i * 10 + 10,
            )
        )
    w.close()
    report = diagnose(w.path, select=["C4", "P7"], ignore=["P701"])
    codes = {f.code for f in report.findings}
    assert codes == {c for c in RULES if c.startswith(("C4", "P7"))} - {"P701"}
    assert report.run.run_id == "api" and report.failures[0].code == "C450"
    assert report.settings.select == ["C4", "P7"] and report.settings.ignore == ["P701"]
    with_config = diagnose(w.path, config={"ignore": ["C450"]}, select=None)
    assert "C450" not in {f.code for f in with_config.findings}
    assert diagnose(
        w.path, config={"thresholds": {"C451": {"max_retraces": 0}}}
    ).settings.thresholds == {"C451": {"max_retraces": 0}}


def test_numpy_scalars_are_plain_numbers():
    np = pytest.importorskip("numpy")
    facts = {"context.graph_retraces": np.int64(7), "throughput.measured_steps": np.int64(1000)}
    finding = evaluate(RULES["C451"], facts)
    assert finding.status == "fail" and finding.evidence[0].value == 7
    report = diagnose_facts({"time.val_fraction": np.float32(0.5)}, [RULES["D607"]], run=RUN)
    assert report.failures[0].code == "D607" and isinstance(
        report.facts["time.val_fraction"].value, float
    )
