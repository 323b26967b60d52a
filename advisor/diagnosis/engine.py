"""The engine: rules × facts → findings (fail / pass / unknown / n/a / error), ranked.

Pure: no I/O, each rule isolated. A rule whose evaluation raises becomes an ``error`` finding and
the others still run. A rule is *unknown* when a fact it requires was not measured (the finding
says how to measure it), *n/a* when its ``applies`` condition is false, and otherwise *fail* or
*pass* by its condition. Failures are ranked by estimated time saved (the finding's impact),
severity breaking ties, so the first finding is the first thing to fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from advisor.analysis.registry import FactRegistry, registry
from advisor.diagnosis.measured_gains import ceilings_for, lead_with_measured, measured_for
from advisor.diagnosis.missing_facts import enabler, hints_for, withheld_reasons
from advisor.diagnosis.ranking import rank
from advisor.diagnosis.report import (
    Coverage,
    Evidence,
    FactValue,
    Finding,
    Report,
    RunInfo,
    SectionCoverage,
    Settings,
    Summary,
    ToDecide,
)
from advisor.diagnosis.rules import SECTIONS, SEVERITIES, Rule, custom_loop

# Impact of a failure whose rule gives no estimate: none. Ranking puts it after every failure
# that saves time, and severity orders it among the others.
DEFAULT_IMPACT = {"info": 0.0, "warning": 0.0, "error": 0.0}
ADVICE_MEASURE = "needs a human decision; the evidence the advisor has is listed"


def docs_path(code: str) -> str:
    return f"docs/rules/{code}.md"


def _finding(rule: Rule, status: str, message: str, **extra: Any) -> Finding:
    return Finding(
        code=rule.code,
        name=rule.name,
        section=rule.section,
        summary=rule.summary,
        status=status,  # type: ignore[arg-type]
        severity=extra.pop("severity", rule.severity),
        message=message,
        docs=docs_path(rule.code),
        **extra,
    )


def _evidence(rule: Rule, facts: Mapping[str, Any], reg: FactRegistry) -> list[Evidence]:
    out = []
    for name in rule.facts:
        if name in facts:
            fact = reg.get(name)
            out.append(
                Evidence(fact=name, value=_jsonable(facts[name]), unit=fact.unit if fact else "")
            )
    return out


def _jsonable(value: Any) -> Any:
    """Plain Python data: numpy scalars become numbers, tuples lists, other objects strings."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        return _jsonable(item())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _unknown(
    rule: Rule,
    missing: Sequence[str],
    facts: Mapping[str, Any],
    params: Mapping[str, Any],
    reg: FactRegistry,
) -> Finding:
    withheld = withheld_reasons(missing, facts)
    measure = withheld or rule.measure or hints_for(missing, reg, track=custom_loop(facts))
    names = ", ".join(missing)
    message = (
        f"not measured: {names}" if missing else "could not be decided from the measured facts"
    )
    if withheld:
        message = f"not decided: {names} withheld ({withheld})"
    return _finding(
        rule,
        "unknown",
        message,
        missing=list(missing),
        measure=measure,
        evidence=_evidence(rule, facts, reg),
    )


def evaluate(
    rule: Rule,
    facts: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    *,
    measured_steps: int | None = None,
    min_measured_steps: int = 20,
    reg: FactRegistry | None = None,
) -> Finding:
    """One rule on one set of facts. Never raises: a failing rule becomes an ``error`` finding."""
    reg = reg or registry()
    values = {**rule.params, **(params or {})}
    if any(not isinstance(v, (str, int, float, bool, list, tuple, dict)) for v in facts.values()):
        facts = {k: _jsonable(v) for k, v in facts.items()}
    try:
        found = _evaluate(rule, facts, values, measured_steps, min_measured_steps, reg)
        found.measured = measured_for(rule.whatif, facts, rule.ceiling)
        found.fix = lead_with_measured(found.fix, found.measured)
        found.ceilings = ceilings_for((e.fact for e in found.evidence), facts, found.measured)
        return found
    except Exception as exc:  # noqa: BLE001 — one broken rule must not hide the others
        return _finding(
            rule,
            "error",
            f"the rule could not be evaluated: {exc}",
            error=f"{type(exc).__name__}: {exc}",
        )


def _referenced_missing(expr: Any, facts: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    names = expr.facts if expr is not None else frozenset()
    return [n for n in order if n in names and n not in facts]


def _evaluate(
    rule: Rule,
    facts: Mapping[str, Any],
    params: dict[str, Any],
    measured_steps: int | None,
    min_steps: int,
    reg: FactRegistry,
) -> Finding:
    if rule.fit_only and custom_loop(facts):
        return _finding(
            rule,
            "n/a",
            f"does not apply to a custom loop: {rule.fit_only}",
            evidence=_evidence(rule, facts, reg),
        )
    if rule.applies is not None:
        applies = rule.applies.evaluate(facts, params)
        if applies is None:
            return _unknown(
                rule, _referenced_missing(rule.applies, facts, rule.facts), facts, params, reg
            )
        if not applies:
            why = rule.na_message.render(facts, params) if rule.na_message else None
            return _finding(
                rule,
                "n/a",
                why or "does not apply to this run",
                evidence=_evidence(rule, facts, reg),
            )
    missing = [name for name in rule.requires if name not in facts]
    if rule.requires_any and not any(name in facts for name in rule.requires_any):
        missing.extend(rule.requires_any)
    if missing:
        return _unknown(rule, missing, facts, params, reg)
    if rule.advice or rule.condition is None:
        return _finding(
            rule,
            "unknown",
            rule.message.render(facts, params),
            fix=rule.fix_in(facts).render(facts, params),
            measure=rule.measure or ADVICE_MEASURE,
            evidence=_evidence(rule, facts, reg),
        )
    verdict = rule.condition.evaluate(facts, params)
    thresholds = {name: params[name] for name in rule.threshold_names}
    if verdict is None:
        found = _unknown(
            rule, _referenced_missing(rule.condition, facts, rule.facts), facts, params, reg
        )
        found.thresholds = thresholds
        return found
    if not verdict:
        message = rule.pass_message.render(facts, params) if rule.pass_message else "ok"
        return _finding(
            rule, "pass", message, evidence=_evidence(rule, facts, reg), thresholds=thresholds
        )

    severity, note = _severity(rule, facts, params, measured_steps, min_steps)
    return _finding(
        rule,
        "fail",
        rule.message.render(facts, params),
        severity=severity,
        fix=rule.fix_in(facts).render(facts, params),
        impact=_impact(rule, facts, params, severity),
        evidence=_evidence(rule, facts, reg),
        thresholds=thresholds,
        note=note,
    )


def _severity(
    rule: Rule,
    facts: Mapping[str, Any],
    params: dict[str, Any],
    measured_steps: int | None,
    min_steps: int,
) -> tuple[str, str | None]:
    """A failure's severity (the first ``severity_when`` that holds, else the rule's), and why it
    is reported as info when a gated rule has too few measured steps."""
    severity = rule.severity
    for level, expr in rule.severity_when:
        if expr.evaluate(facts, params):
            severity = level
            break
    if (
        rule.gated
        and measured_steps is not None
        and measured_steps < min_steps
        and severity != "info"
    ):
        note = (
            f"only {measured_steps} measured steps (fewer than {min_steps}): "
            "reported as info until there is more evidence"
        )
        return "info", note
    return severity, None


def _impact(rule: Rule, facts: Mapping[str, Any], params: dict[str, Any], severity: str) -> float:
    """The rule's impact estimate, clamped to [0, 1]; the severity's default without one."""
    impact = rule.impact.evaluate(facts, params) if rule.impact is not None else None
    if isinstance(impact, bool) or not isinstance(impact, (int, float)):
        impact = DEFAULT_IMPACT[severity]
    return round(min(1.0, max(0.0, float(impact))), 4)


def coverage(
    findings: Sequence[Finding],
    rules: Mapping[str, Rule] | None = None,
    reg: FactRegistry | None = None,
    track: bool = False,
) -> Coverage:
    """Decided (pass or fail), n/a and unknown per section, and what would decide the unknowns
    (``track``: in the words of a custom loop)."""
    reg = reg or registry()
    sections: dict[str, SectionCoverage] = {}
    groups: dict[str, ToDecide] = {}
    for f in findings:
        sec = sections.setdefault(
            f.section, SectionCoverage(title=SECTIONS.get(f.section, f.section), decided=0, total=0)
        )
        sec.total += 1
        if f.status in ("fail", "pass"):
            sec.decided += 1
        elif f.status == "n/a":
            sec.not_applicable += 1
        elif f.status == "unknown":
            sec.unknown += 1
            rule = (rules or {}).get(f.code)
            label, how = enabler(f.missing, reg, advice=bool(rule and rule.advice), track=track)
            groups.setdefault(label, ToDecide(enable=label, how=how, rules=[])).rules.append(f.code)
    decided = sum(s.decided for s in sections.values())
    total = sum(s.total for s in sections.values())
    ordered = {k: sections[k] for k in SECTIONS if k in sections}
    return Coverage(
        decided=decided,
        total=total,
        fraction=round(decided / total, 4) if total else 0.0,
        not_applicable=sum(s.not_applicable for s in sections.values()),
        unknown=sum(s.unknown for s in sections.values()),
        sections=ordered,
        to_decide=sorted(groups.values(), key=lambda g: (-len(g.rules), g.enable)),
    )


def summarize(findings: Sequence[Finding]) -> Summary:
    s = Summary()
    for f in findings:
        if f.status == "fail":
            s.fail += 1
            s.by_severity[f.severity] = s.by_severity.get(f.severity, 0) + 1
        elif f.status == "pass":
            s.passed += 1
        elif f.status == "unknown":
            s.unknown += 1
        elif f.status == "n/a":
            s.not_applicable += 1
        else:
            s.error += 1
    s.by_severity = {k: s.by_severity[k] for k in SEVERITIES if k in s.by_severity}
    return s


def fact_values(facts: Mapping[str, Any], reg: FactRegistry) -> dict[str, FactValue]:
    out: dict[str, FactValue] = {}
    for name in sorted(facts):
        fact = reg.get(name)
        out[name] = FactValue(
            value=_jsonable(facts[name]),
            unit=fact.unit if fact else "",
            source=fact.source if fact else "",
        )
    return out


def diagnose_facts(
    facts: Mapping[str, Any],
    rules: Sequence[Rule],
    *,
    run: RunInfo,
    thresholds: Mapping[str, Mapping[str, Any]] | None = None,
    min_measured_steps: int = 20,
    errors: Sequence[str] = (),
    settings: Settings | None = None,
    generated_at: str | None = None,
    reg: FactRegistry | None = None,
) -> Report:
    """A report from already-derived facts (the pure core of :func:`advisor.diagnosis.diagnose`)."""
    from advisor._version import __version__

    reg = reg or registry()
    facts = {name: _jsonable(value) for name, value in facts.items()}  # numpy scalars → numbers
    steps = facts.get("throughput.measured_steps")
    measured = (
        int(steps) if isinstance(steps, (int, float)) and not isinstance(steps, bool) else None
    )
    found = [
        evaluate(
            rule,
            facts,
            (thresholds or {}).get(rule.code),
            measured_steps=measured,
            min_measured_steps=min_measured_steps,
            reg=reg,
        )
        for rule in rules
    ]
    by_code = {rule.code: rule for rule in rules}
    ranked = rank(found, by_code)
    return Report(
        advisor_version=__version__,
        generated_at=generated_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        run=run,
        findings=ranked,
        coverage=coverage(ranked, by_code, reg, track=custom_loop(facts)),
        summary=summarize(ranked),
        facts=fact_values(facts, reg),
        errors=list(errors),
        settings=settings,
    )
