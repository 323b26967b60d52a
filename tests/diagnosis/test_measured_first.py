"""Measured findings before generic advice, and a gain inside its noise band never the fix.

Table-driven cases on the report model: the ranking of an unpriced failure (no measured gain,
no estimated impact, e.g. G502 "try XLA"), the measured fix a finding leads with, and the summary's
pipeline advice beside a measured input cost.
"""

from __future__ import annotations

from advisor.diagnosis.measured_gains import lead_with_measured, measured_for
from advisor.diagnosis.ranking import rank, unpriced
from advisor.diagnosis.report import Finding, Measured
from advisor.render.summary import _fmt


def _fail(code: str, severity: str, impact: float | None, measured: Measured | None = None):
    return Finding(
        code=code,
        name=code.lower(),
        section=code[:2],
        summary="",
        status="fail",
        severity=severity,
        message="",
        impact=impact,
        measured=measured,
        docs="",
    )


def test_generic_advice_ranks_after_measured_and_estimated_findings():
    xla = _fail("G502", "warning", 0.0)  # even at a higher severity than the others
    ceiling = Measured(candidate="input_removed", speedup=1.5, ceiling=True, text="")
    measured_info = _fail("C999", "info", 0.0, ceiling)
    estimated = _fail("M108", "info", 0.3)
    assert unpriced(xla) and not unpriced(measured_info) and not unpriced(estimated)
    assert [f.code for f in rank([xla, measured_info, estimated])] == ["M108", "C999", "G502"]


TABLE = [
    {"candidate": "tfdata_options", "label": "options", "speedup": 1.09, "band": 0.3},
    {"candidate": "cache_map", "label": "ds.cache()", "speedup": 1.05, "band": 0.02},
]


def test_a_gain_inside_its_band_is_not_the_measured_fix():
    rows = [
        {**TABLE[0], "outside_band": False},
        {**TABLE[1], "outside_band": True},
    ]
    measured = measured_for(["tfdata_options", "cache_map"], {"whatif.table": rows})
    assert measured is not None and measured.candidate == "cache_map"  # beyond its band wins
    assert lead_with_measured("Cache it.", measured).startswith("Measured best on this run")

    inside = measured_for(["tfdata_options"], {"whatif.table": rows})
    assert inside is not None and "inside its noise band" in inside.text
    assert lead_with_measured("Cache it.", inside) == "Cache it."
    unbanded = Measured(candidate="x", label="x", speedup=1.3, outside_band=None, text="")
    assert lead_with_measured("Cache it.", unbanded) == "Cache it."


def test_no_change_needed_is_never_said_beside_a_measured_input_cost():
    costly = {
        "pipeline.advice": [],
        "input.bound_fraction": 0.38,
        "input.bound_outside_band": True,
    }
    text = _fmt("changes", "pipeline.advice", costly)
    assert text is not None and "no change needed" not in text and "38" in text
    free = {**costly, "input.bound_outside_band": False}
    assert _fmt("changes", "pipeline.advice", free).startswith("no change needed")


def test_an_untried_whatif_fix_ranks_after_the_other_unpriced_findings():
    from advisor.diagnosis.rules import load_rules

    rules = {r.code: r for r in load_rules()}
    xla, price = _fail("G502", "info", None), _fail("M102", "info", None)
    goodput = _fail("M170", "info", 0.0)
    ranked = [f.code for f in rank([xla, price, goodput], rules)]
    assert ranked[-1] == "G502" and set(ranked[:2]) == {"M102", "M170"}
