"""The engine: evidence gating, error isolation, ranking, coverage, selection, the diagnose API."""

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


def test_ranking_by_time_saved_then_severity():
    facts = {
        "input.bound_fraction": 0.7,
        "input.share": 0.7,
        "baseline.cached_samples_per_s": 300.0,
        "baseline.real_samples_per_s": 90.0,
        "context.jit_compile": False,
        "context.tuner": False,
        "context.run_eagerly": True,
        "time.val_fraction": 0.9,
    }
    report = diagnose_facts(facts, list(RULES.values()), run=RUN)
    order = [(f.code, f.severity, f.impact) for f in report.failures]
    # Validation takes 90% of each epoch (a warning), the input 70% of the step (an error), eager
    # execution an estimated 50% (an error): the most time saved comes first, whatever the severity.
    assert [code for code, _, _ in order[:3]] == ["D607", "M108", "C450"]
    impacts = [impact or 0.0 for _, _, impact in order]
    assert impacts == sorted(impacts, reverse=True)
    statuses = [f.status for f in report.findings]
    assert statuses == sorted(statuses, key=["fail", "error", "unknown", "n/a", "pass"].index)


def test_severity_breaks_ties_and_causes_come_before_their_symptom():
    facts = {
        "input.bound_fraction": 0.5,
        "input.share": 0.5,
        "input.bound_outside_band": True,
        "baseline.cached_samples_per_s": 200.0,
        "baseline.real_samples_per_s": 100.0,
        "pipeline.prefetch": False,
        "pipeline.sequential_maps": 1,
        "pipeline.input_kind": "tf.data",
        "context.jit_compile": False,
        "context.tuner": False,
    }
    report = diagnose_facts(facts, list(RULES.values()), run=RUN)
    failures = report.failures
    # C401 (the cause: no prefetch, a sequential map) and M108 (the symptom: input costs 50%)
    # price the same time at the same severity: the cause comes first.
    assert [f.code for f in failures[:2]] == ["C401", "M108"]
    assert failures[0].impact == failures[1].impact == 0.5
    # Equal (zero) impact: the warning before the infos.
    zero = [f for f in failures if not f.impact]
    ranks = {"error": 0, "warning": 1, "info": 2}
    assert [ranks[f.severity] for f in zero] == sorted(ranks[f.severity] for f in zero)


def test_coverage_counts_pass_and_fail_as_decided_and_says_what_decides_the_rest():
    report = diagnose_facts(
        {"context.tuner": True, "context.tracking": False, "gpu.present": False},
        [RULES["P702"], RULES["P704"], RULES["M108"], RULES["M105"], RULES["M110"], RULES["I202"]],
        run=RUN,
    )
    cov = report.coverage
    assert (cov.decided, cov.not_applicable, cov.unknown, cov.total) == (2, 1, 3, 6)
    assert cov.sections["P7"].decided == 2 and cov.sections["M1"].decided == 0
    assert cov.sections["M1"].not_applicable == 1 and cov.sections["M1"].unknown == 2
    assert cov.fraction == pytest.approx(2 / 6, abs=1e-3)  # n/a is not decided (CHECKLIST.md)
    to_decide = {g.enable: g.rules for g in cov.to_decide}
    assert to_decide == {
        "baseline": ["M108"],
        "profile_steps": ["M110"],
        "a human decision": ["I202"],
    }


def test_unknown_says_how_to_measure():
    finding = evaluate(RULES["M108"], {})
    assert finding.status == "unknown"
    assert 'baseline="auto"' in finding.measure
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


def test_a_finding_demoted_for_weak_evidence_is_credited_no_time():
    shared = {
        "host.others_cpu_fraction": 0.5,
        "steps.outliers": 40,
        "steps.outlier_fraction": 0.3,
        "context.jit_compile": False,
    }
    # Stalls on a shared host (info, an estimate of 30%) and a cache after random augmentation
    # (a warning that costs no time): the warning stands on its own and comes first.
    with_warning = {
        **shared,
        "pipeline.uncached_deterministic_map": False,
        "pipeline.cache_after_random": True,
    }
    order = [
        f.code
        for f in diagnose_facts(
            with_warning, [RULES["M150"], RULES["C402"], RULES["G502"]], run=RUN
        ).failures
    ]
    assert order == ["C402", "M150", "G502"]
    # Among findings credited no time, the demoted one's estimate still orders it first.
    order = [
        f.code for f in diagnose_facts(shared, [RULES["M150"], RULES["G502"]], run=RUN).failures
    ]
    assert order == ["M150", "G502"]
    # On a host of its own, the same stalls are a warning credited 30%.
    alone = {**with_warning, "host.others_cpu_fraction": 0.0}
    found = diagnose_facts(alone, [RULES["M150"], RULES["C402"]], run=RUN).failures
    assert [(f.code, f.severity) for f in found] == [("M150", "warning"), ("C402", "warning")]
