"""A backend what-if that ran and measured nothing beside the run's own (or not even it): the
facts keep every candidate's whole reason, G560 is unknown saying why (not asking for the run
that was made), and ``show``/``check`` print the reasons."""

from __future__ import annotations

import io

from rich.console import Console
from whatif_fixtures import backends_facts

from advisor.diagnosis import evaluate, load_rules
from advisor.diagnosis.report import as_facts
from advisor.experiments.backends.result import FAILED, BackendCandidate, BackendsResult, Config
from advisor.render.whatif import backends_parts

LONG = (
    "cannot rebuild the model on jax: TypeError: <class 'Sequential'> could not be deserialized "
    "properly. config={…} Exception encountered: "
    + " ".join(f"w{i}" for i in range(120))
    + " (in train.py:12, call)"
)


def _facts(tmp_path, result: BackendsResult) -> dict:
    return backends_facts(tmp_path, result)


def test_a_whatif_that_measured_nothing_says_why_in_g560_and_the_report(tmp_path) -> None:
    result = BackendsResult("tensorflow", 32, 8, seconds=18.5)
    for name in ("tensorflow", "jax+jit"):
        result.candidates[name] = BackendCandidate(Config.parse(name), FAILED, f"{name}: {LONG}")
    facts = _facts(tmp_path, result)
    withheld = facts["backends.withheld"]
    assert "could not measure the run's own (tensorflow)" in withheld
    assert withheld.count(LONG) == 2  # each reason whole
    rule = next(r for r in load_rules() if r.code == "G560")
    finding = evaluate(rule, facts)
    assert finding.status == "unknown"
    assert LONG in finding.measure and "advisor backends MODEL" not in finding.measure
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None)
    for part in backends_parts(as_facts(facts)):
        console.print(part)
    text = " ".join(out.getvalue().split())
    assert "Backend what-if: 0 of 2 candidates measured in 18.5 s — nothing measured" in text
    assert text.count("w118 w119 (in train.py:12, call)") == 2


def test_g560_still_asks_for_the_whatif_when_it_was_not_run(tmp_path) -> None:
    rule = next(r for r in load_rules() if r.code == "G560")
    finding = evaluate(rule, {"backends.own": "tensorflow"})
    assert finding.status == "unknown" and "advisor backends MODEL" in finding.measure
