"""A finding carries the gain its fix was measured to give (the what-if), and ranking uses it."""

from __future__ import annotations

import textwrap

import pytest
from whatif_fixtures import input_bound_run

from advisor.analysis.registry import registry
from advisor.diagnosis import diagnose_facts, load_rules
from advisor.diagnosis.measured_gains import lead_with_measured, measured_for, measured_text
from advisor.diagnosis.report import RunInfo
from advisor.diagnosis.rules import load_file
from advisor.errors import RuleError
from advisor.service import diagnose


def test_measured_text_reads_like_the_issue():
    assert measured_text(2.4, 0.04, 3.1) == "measured: 2.4× (±4%) in 3.1 s"
    assert measured_text(1.05, None, None) == "measured: 1.05×"
    assert measured_text(54.3, 0.5, 5.0) == "measured: 54× (±50%) in 5.0 s"


def test_the_best_measured_candidate_of_the_rule_is_chosen():
    table = [
        {"candidate": "prefetch", "speedup": 1.01, "band": 0.02, "seconds": 2.0},
        {
            "candidate": "parallel_map",
            "speedup": 2.4,
            "band": 0.04,
            "seconds": 3.1,
            "label": "map #1",
        },
        {"candidate": "cache_map", "speedup": None, "status": "skipped"},
    ]
    found = measured_for(("prefetch", "parallel_map", "cache_map"), {"whatif.table": table})
    assert (
        found is not None
        and found.candidate == "parallel_map"
        and found.text == "measured: 2.4× (±4%) in 3.1 s"
    )
    assert found.time_saved == pytest.approx(1 - 1 / 2.4)
    assert measured_for(("cache_map",), {"whatif.table": table}) is None
    assert measured_for((), {"whatif.table": table}) is None


def test_findings_of_a_run_with_a_whatif_carry_the_measured_gain(tmp_path):
    report = diagnose(input_bound_run(tmp_path))
    by_code = {f.code: f for f in report.findings}
    c401 = by_code["C401"]  # parallel maps and prefetch: the best measured of them
    assert c401.status == "fail" and c401.measured is not None
    assert c401.measured.candidate == "parallel_map" and c401.measured.text.startswith(
        "measured: 2.4×"
    )
    assert by_code["C402"].measured.candidate == "cache_map"  # type: ignore[union-attr]
    assert by_code["M108"].measured.candidate == "cache_map"  # type: ignore[union-attr]
    assert by_code["G502"].measured is None  # jit_compile was not measured
    exported = report.model_dump(mode="json")
    c401_json = next(f for f in exported["findings"] if f["code"] == "C401")
    assert (
        c401_json["measured"]["speedup"] == pytest.approx(2.4)
        and c401_json["measured"]["candidate"] == "parallel_map"
    )
    assert exported["facts"]["whatif.parallel_map.speedup"]["value"] == pytest.approx(2.4)


def test_the_fix_leads_with_the_change_that_measured_best_beyond_its_noise(tmp_path):
    from whatif_fixtures import UNCHANGED, whatif_record

    def c402(run):
        return next(f for f in diagnose(run).findings if f.code == "C402")

    led = c402(input_bound_run(tmp_path / "steady"))  # cache_map 40× in every round
    lead = "Measured best on this run: ds.cache() after map #1 ('decode') (40×). "
    assert led.fix is not None and led.fix.startswith(lead)
    # Every round faster but spread 2.5-25× (written rounds, as wide as a loaded host's: the cached
    # arm is CPU-bound, the real one mostly waits): the band's larger side exceeds the gain, and the
    # general advice stays first.
    record = whatif_record()
    cache = next(c for c in record.candidates if c.name == "cache_map")
    cache.rounds = [u * r for u, r in zip(UNCHANGED, (2.5, 7.5, 20.0, 3.0, 8.0, 25.0))]
    spread = c402(input_bound_run(tmp_path / "spread", record))
    assert spread.measured is not None and spread.measured.candidate == "cache_map"
    assert spread.measured.outside_band is False and spread.measured.speedup > 2.5
    assert spread.fix == led.fix.removeprefix(lead)


def test_a_measured_lead_says_per_sample_and_never_leads_with_a_ceiling_or_a_loss():
    fix = "double the batch size"
    row = {
        "candidate": "batch_x2",
        "label": "batch size ×2",
        "speedup": 1.5,
        "band": 0.05,
        "outside_band": True,
        "changes_optimisation": True,
    }
    measured = measured_for(("batch_x2",), {"whatif.table": [row]})
    assert (
        lead_with_measured(fix, measured)
        == f"Measured best on this run: batch size ×2 (1.50×, per sample). {fix}"
    )
    slower = measured_for(("batch_x2",), {"whatif.table": [dict(row, speedup=0.8)]})
    assert lead_with_measured(fix, slower) == fix
    assert (
        lead_with_measured(fix, measured_for((), BASELINE_FACTS, ("input_removed",))) == fix
    )  # a ceiling
    assert lead_with_measured(None, measured) is None and lead_with_measured(fix, None) == fix


def _rule(tmp_path, code: str, impact: float, whatif: str = "") -> None:
    (tmp_path / f"{code}.yaml").write_text(
        textwrap.dedent(f"""\
        section: C4
        rules:
          - code: {code}
            name: rule-{code.lower()}
            summary: A test rule.
            severity: warning
            requires: [pipeline.maps]
            condition: pipeline.maps > 0
            impact: {impact}
            message: maps {{pipeline.maps}}
            fix: fewer maps
            {whatif}
            docs: {{what: a, why: b, how: c, impact: e, references: [d]}}
        """)
    )


def test_a_measured_gain_replaces_the_estimate_in_the_ranking(tmp_path):
    _rule(tmp_path, "C490", 0.5)  # estimated 50 % at stake, not measured
    _rule(
        tmp_path, "C491", 0.1, "whatif: [parallel_map]"
    )  # estimated 10 %, measured 3× = 67 % saved
    rules = load_rules(tmp_path)
    facts = {"pipeline.maps": 2, "whatif.table": [{"candidate": "parallel_map", "speedup": 3.0}]}
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == ["C491", "C490"]
    facts["whatif.table"] = [
        {"candidate": "parallel_map", "speedup": 1.2}
    ]  # 17 % saved: below the estimate
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == ["C490", "C491"]


def test_a_gain_inside_its_noise_band_does_not_outrank_an_estimate(tmp_path):
    _rule(tmp_path, "C490", 0.1)  # estimated 10 % at stake
    _rule(tmp_path, "C491", 0.05, "whatif: [jit_compile]")
    rules = load_rules(tmp_path)
    facts = {
        "pipeline.maps": 2,
        "whatif.table": [{"candidate": "jit_compile", "speedup": 1.18, "band": 0.27}],
    }
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == [
        "C490",
        "C491",
    ]  # 1.18× ± 27% may be no gain at all
    assert report.failures[1].measured.assured_time_saved == 0.0  # type: ignore[union-attr]
    facts["whatif.table"] = [
        {"candidate": "jit_compile", "speedup": 1.5, "band": 0.05}
    ]  # ≥ 1.43×: 30 % saved
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == ["C491", "C490"]


def test_a_rule_naming_an_unknown_candidate_is_refused(tmp_path):
    _rule(tmp_path, "C492", 0.1, "whatif: [parallel_mapp]")
    with pytest.raises(RuleError, match="unknown what-if candidate 'parallel_mapp'"):
        load_file(tmp_path / "C492.yaml", registry().names())


# -- ceilings: fixes that cannot be tried here (``ceiling:`` in a rule file) ----------------------

BASELINE_FACTS = {
    "input.removed_speedup": 8.0,
    "input.removed_speedup_band": 0.05,
    "baseline.cached_samples_per_s": 8000.0,
    "baseline.measured_seconds": 4.0,
    "input.source_cache_gain": 3.0,
    "input.source_cache_gain_band": 0.4,
    "baseline.source_cached_samples_per_s": 4000.0,
}


def test_a_ceiling_reads_the_baseline_and_says_it_is_one():
    found = measured_for((), BASELINE_FACTS, ("input_removed",))
    assert found is not None and found.ceiling and found.candidate == "input_removed"
    assert found.speedup == pytest.approx(8.0) and found.samples_per_s == pytest.approx(8000.0)
    assert (
        found.text == "measured ceiling: 8.0× (±5%) in 4.0 s (the fix can approach it, not pass it)"
    )
    assert found.label is not None and found.label.startswith("the input served from memory")
    # The source cache's gain is relative (3.0 = 4×) and its band absolute: shown as a speedup and
    # as a share.
    reads = measured_for((), BASELINE_FACTS, ("reads_removed", "input_removed"))
    assert reads is not None and reads.candidate == "reads_removed"
    assert (
        reads.speedup == pytest.approx(4.0)
        and reads.band == pytest.approx(0.1)
        and reads.outside_band
    )
    # The first ceiling that was measured: without a source-cache arm, the input served from memory.
    only_cached = {
        k: v
        for k, v in BASELINE_FACTS.items()
        if not k.startswith(("input.source", "baseline.source"))
    }
    fallback = measured_for((), only_cached, ("reads_removed", "input_removed"))
    assert fallback is not None and fallback.candidate == "input_removed"
    assert (
        measured_for((), {}, ("reads_removed", "input_removed")) is None
    )  # no baseline, no ceiling


def test_a_tried_fix_comes_before_a_ceiling():
    facts = dict(
        BASELINE_FACTS,
        **{"whatif.table": [{"candidate": "parallel_map", "speedup": 1.5, "band": 0.1}]},
    )
    found = measured_for(("parallel_map",), facts, ("input_removed",))
    assert found is not None and not found.ceiling and found.candidate == "parallel_map"
    # A what-if candidate may be a ceiling too, e.g. a cache standing for a rewrite.
    facts["whatif.table"].append({"candidate": "cache_map", "speedup": 20.0, "band": 0.2})
    bound = measured_for(("prefetch",), facts, ("cache_map",))
    assert bound is not None and bound.ceiling and bound.text.startswith("measured ceiling: 20×")


def test_the_whatifs_cached_input_is_a_ceiling_and_never_the_best_fix(tmp_path):
    from whatif_fixtures import UNCHANGED, input_bound_run, whatif_record

    from advisor.store.schema import WhatIfCandidate

    record = whatif_record()
    record.candidates.append(
        WhatIfCandidate(
            name="cached_input",
            status="measured",
            label="served from memory",
            batch_size=32,
            rounds=[r * 60.0 for r in UNCHANGED],
            steps=900,
            seconds=3.0,
        )
    )
    report = diagnose(input_bound_run(tmp_path, record))
    facts = {k: v.value for k, v in report.facts.items()}
    assert facts["whatif.best"] == "cache_map" and facts["whatif.best_speedup"] == pytest.approx(
        40.0
    )
    assert facts["whatif.cached_input.speedup"] == pytest.approx(60.0)
    row = next(r for r in facts["whatif.table"] if r["candidate"] == "cached_input")
    assert row["ceiling"] is True
    found = measured_for(
        (), facts, ("cached_input", "input_removed")
    )  # the what-if's, before the baseline's
    assert found is not None and found.ceiling and found.speedup == pytest.approx(60.0)
    assert found.label == "served from memory"


def test_a_ceiling_does_not_rank_a_finding(tmp_path):
    _rule(tmp_path, "C490", 0.5)  # estimated 50 % at stake
    _rule(
        tmp_path, "C491", 0.1, "ceiling: [input_removed]"
    )  # estimated 10 %, ceiling 8× (88 % saved at most)
    rules = load_rules(tmp_path)
    report = diagnose_facts(
        dict(BASELINE_FACTS, **{"pipeline.maps": 2}), rules, run=RunInfo(run_id="r")
    )
    assert [f.code for f in report.failures] == ["C490", "C491"]
    c491 = report.failures[1]
    assert c491.measured is not None and c491.measured.ceiling
    assert report.model_dump(mode="json")["findings"][1]["measured"]["ceiling"] is True


def test_a_rule_naming_an_unknown_ceiling_is_refused(tmp_path):
    _rule(tmp_path, "C493", 0.1, "ceiling: [input_gone]")
    with pytest.raises(RuleError, match="unknown ceiling 'input_gone'"):
        load_file(tmp_path / "C493.yaml", registry().names())
    _rule(tmp_path, "C493", 0.1, "ceiling: input_removed")
    with pytest.raises(RuleError, match="ceiling must be a list"):
        load_file(tmp_path / "C493.yaml", registry().names())


def test_the_shipped_rules_whose_fix_cannot_be_tried_name_a_ceiling():
    rules = {r.code: r for r in load_rules()}
    # other machines' CPUs: the input served from memory, measured by the what-if (longer rounds),
    # else by the baseline
    assert rules["C404"].ceiling == ("cached_input", "input_removed")
    # files repacked into shards: the reads cached (what-if, then baseline), else the whole input
    assert rules["S301"].ceiling == (
        "cache_source",
        "reads_removed",
        "cached_input",
        "input_removed",
    )
    assert rules["G505"].whatif == (
        "cache_map",
        "cache_source",
        "parallel_map",
    )  # run it once, or in parallel
