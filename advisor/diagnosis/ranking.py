"""Ranking the findings: failures first, by the training time their fix is credited to save.

The credit is the what-if's measured gain where it tried the fix, else the rule's estimate
(:func:`saving`); severity, then causes before symptoms, break ties (:func:`rank`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.diagnosis.report import SEVERITY_RANK, STATUS_ORDER, Finding
from advisor.diagnosis.rules import Rule

IMPACT_RESOLUTION = 0.01  # impacts closer than one point of training time are a tie


def saving(finding: Finding, rule: Rule | None = None) -> float:
    """The share of training time the ranking credits a failure with: its estimated impact,
    unless the failure is reported below its rule's severity — too few measured steps, a shared
    host whose noise may be what was measured — where its estimate is not trusted to outrank a
    finding that stands on its own (it still orders the findings it ties with). A fix the what-if
    tried is credited with the share of step time it was measured to save at the low end of its
    noise band (1 − 1 ÷ (speedup × (1 − band)), at least 0: a gain inside its band credits
    nothing); a measured ceiling (a fix that could not be tried) is not a gain and leaves the
    estimate."""
    if finding.measured is not None and not finding.measured.ceiling:
        return finding.measured.assured_time_saved
    if rule is not None and SEVERITY_RANK[finding.severity] < SEVERITY_RANK[rule.severity]:
        return 0.0
    return finding.impact or 0.0


def unpriced(finding: Finding) -> bool:
    """Nothing prices this failure: no measured gain or ceiling, and no estimated impact."""
    return finding.measured is None and not finding.impact


def untried(finding: Finding, rule: Rule | None) -> bool:
    """An unpriced failure whose fix the what-if can try but did not ("try XLA" unmeasured):
    it ranks after the other unpriced ones, which at least state what the run did."""
    return unpriced(finding) and rule is not None and bool(rule.whatif)


def rank(findings: Sequence[Finding], rules: Mapping[str, Rule] | None = None) -> list[Finding]:
    """Failures first — by estimated time saved, then severity, then causes before symptoms —
    then errors, unknown, n/a, pass.

    The time saved is the what-if's measured gain where it tried the fix, else the rule's
    estimate. Impacts within IMPACT_RESOLUTION of each other are a tie (they are measured, and two
    rules often price the same lost time, e.g. the input's share of step time). On a tie the more
    severe finding comes first; then the larger estimate of a finding credited none (see
    :func:`saving`); then a rule naming a cause (C401 "no prefetch") before the rule that
    measures its symptom (M108 "input-bound"), whose cost it explains.
    A failure with neither a measured gain nor an estimated cost (generic advice such as "try
    XLA", :func:`unpriced`) comes after every failure that has one, whatever its severity: an
    assumed impact never outranks a measured one, and among those, a fix the what-if could have
    measured but did not comes last (:func:`untried`).
    """
    rules = rules or {}
    symptom = {code for code, rule in rules.items() if rule.symptom}

    def bucket(value: float) -> int:
        return round(value / IMPACT_RESOLUTION)

    def key(f: Finding) -> tuple[Any, ...]:
        if f.status == "fail":
            credited = saving(f, rules.get(f.code))
            return (
                0,
                -bucket(credited),
                unpriced(f),
                untried(f, rules.get(f.code)),
                -SEVERITY_RANK[f.severity],
                -bucket(f.impact or 0.0),
                f.code in symptom,
                f.code,
            )
        return (STATUS_ORDER[f.status], 0, False, False, 0, 0, False, f.code)

    return sorted(findings, key=key)
