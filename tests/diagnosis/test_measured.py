"""A finding carries the gain its fix was measured to give (the what-if), and ranking uses it."""

from __future__ import annotations

import textwrap

import pytest
from whatif_fixtures import input_bound_run

from advisor.analysis.registry import registry
from advisor.diagnosis import diagnose_facts, load_rules
from advisor.diagnosis.measured import measured_for, measured_text
from advisor.diagnosis.report import RunInfo
from advisor.diagnosis.rules import load_file
from advisor.errors import RuleError
from advisor.service import diagnose


def test_measured_text_reads_like_the_issue():
    assert measured_text(2.4, 0.04, 3.1) == "measured: 2.4× (±4%) in 3.1 s"
    assert measured_text(1.05, None, None) == "measured: 1.05×"
    assert measured_text(54.3, 0.5, 5.0) == "measured: 54× (±50%) in 5.0 s"


def test_the_best_measured_candidate_of_the_rule_is_chosen():
    table = [{"candidate": "prefetch", "speedup": 1.01, "band": 0.02, "seconds": 2.0},
             {"candidate": "parallel_map", "speedup": 2.4, "band": 0.04, "seconds": 3.1, "label": "map #1"},
             {"candidate": "cache_map", "speedup": None, "status": "skipped"}]
    found = measured_for(("prefetch", "parallel_map", "cache_map"), {"whatif.table": table})
    assert found is not None and found.candidate == "parallel_map" and found.text == "measured: 2.4× (±4%) in 3.1 s"
    assert found.time_saved == pytest.approx(1 - 1 / 2.4)
    assert measured_for(("cache_map",), {"whatif.table": table}) is None
    assert measured_for((), {"whatif.table": table}) is None


def test_findings_of_a_run_with_a_whatif_carry_the_measured_gain(tmp_path):
    report = diagnose(input_bound_run(tmp_path))
    by_code = {f.code: f for f in report.findings}
    c401 = by_code["C401"]  # parallel maps and prefetch: the best measured of them
    assert c401.status == "fail" and c401.measured is not None
    assert c401.measured.candidate == "parallel_map" and c401.measured.text.startswith("measured: 2.4×")
    assert by_code["C402"].measured.candidate == "cache_map"  # type: ignore[union-attr]
    assert by_code["M108"].measured.candidate == "cache_map"  # type: ignore[union-attr]
    assert by_code["G502"].measured is None  # jit_compile was not measured
    exported = report.model_dump(mode="json")
    c401_json = next(f for f in exported["findings"] if f["code"] == "C401")
    assert c401_json["measured"]["speedup"] == pytest.approx(2.4) and c401_json["measured"]["candidate"] == "parallel_map"
    assert exported["facts"]["whatif.parallel_map.speedup"]["value"] == pytest.approx(2.4)


def _rule(tmp_path, code: str, impact: float, whatif: str = "") -> None:
    (tmp_path / f"{code}.yaml").write_text(textwrap.dedent(f"""\
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
        """))


def test_a_measured_gain_replaces_the_estimate_in_the_ranking(tmp_path):
    _rule(tmp_path, "C490", 0.5)  # estimated 50 % at stake, not measured
    _rule(tmp_path, "C491", 0.1, "whatif: [parallel_map]")  # estimated 10 %, measured 3× = 67 % saved
    rules = load_rules(tmp_path)
    facts = {"pipeline.maps": 2, "whatif.table": [{"candidate": "parallel_map", "speedup": 3.0}]}
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == ["C491", "C490"]
    facts["whatif.table"] = [{"candidate": "parallel_map", "speedup": 1.2}]  # 17 % saved: below the estimate
    report = diagnose_facts(facts, rules, run=RunInfo(run_id="r"))
    assert [f.code for f in report.failures] == ["C490", "C491"]


def test_a_rule_naming_an_unknown_candidate_is_refused(tmp_path):
    _rule(tmp_path, "C492", 0.1, "whatif: [parallel_mapp]")
    with pytest.raises(RuleError, match="unknown what-if candidate 'parallel_mapp'"):
        load_file(tmp_path / "C492.yaml", registry().names())
