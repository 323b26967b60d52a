"""A comparison of two runs in words: the lines of the text report and the TUI, the annotations of
the github format, the results of SARIF and the test cases of JUnit (one per part of the fit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import FigureChange, RunComparison

VERDICT_WORDS = {
    "regression": "REGRESSION",
    "no regression": "ok",
    "contention": "not failed: the host was shared differently",
    "not judgeable": "NOT JUDGEABLE",
}


def interval(f: FigureChange) -> str:
    """'+38.0% [+30.1%, +45.2%]' — the change and its 95 % interval, or why there is none."""
    if f.verdict in ("too few", "one measurement"):
        return f.verdict
    if f.change_pct is None:
        return f"{f.change or 0.0:+.3g} {f.unit} (the baseline had none)"
    return f"{f.change_pct:+.1f}% [{f.low_pct or 0.0:+.1f}%, {f.high_pct or 0.0:+.1f}%]"


def figure_line(f: FigureChange) -> str:
    """One figure: before → after, the change with its interval, the verdict, what it costs and
    the smallest change this pair could tell from noise (half its interval's width)."""
    spec = ",.0f" if f.unit == "samples/$" else ",.3g" if f.unit == "ms/step" else ",.1f"
    before = "-" if f.baseline is None else format(f.baseline, spec)
    after = "-" if f.current is None else format(f.current, spec)
    line = f"{f.label}: {before} → {after} {f.unit}, {interval(f)}"
    if f.verdict not in ("too few", "one measurement"):
        line += f", {f.verdict}"
    notes = []
    if f.step_share_pct is not None and f.verdict not in ("too few", "within noise"):
        notes.append(f"{f.step_share_pct:+.1f}% of a step")
    if f.detectable_pct is not None:
        of_step = " of a step" if f.unit == "ms/step" else ""
        notes.append(f"detectable ±{f.detectable_pct:.1f}%{of_step}")
    if notes:
        line += f" ({'; '.join(notes)})"
    if f.regressed:
        line += "  ← REGRESSED"
    return line


def comparison_lines(c: RunComparison, all_parts: bool = False) -> list[str]:
    """The comparison as plain lines: the verdict, the rates, the parts that moved (all with
    ``all_parts``), the host's sharing, what the runs ran differently and the findings that
    came or went."""
    lines = [f"{VERDICT_WORDS[c.verdict]}: {c.summary}"]
    lines += [figure_line(f) for f in c.rates]
    moved = [p for p in c.parts if all_parts or p.verdict in ("slower", "faster") or p.regressed]
    if moved:
        lines.append("parts of the fit (ms per step, 95% interval):")
        lines += ["  " + figure_line(p) for p in moved]
    quiet = len(c.parts) - len(moved)
    if quiet:
        lines.append(f"  {quiet} other part(s) within noise or measured once")
    if c.contention is not None:
        lines.append(_contention_line(c))
    if c.differences:
        differ = "; ".join(c.differences)
        lines.append(f"the runs differ in what they ran: {differ} (a change may come from that)")
    if c.appeared:
        lines.append("findings new in this run: " + ", ".join(c.appeared))
    if c.disappeared:
        lines.append("findings of the baseline gone: " + ", ".join(c.disappeared))
    lines.append(f"method: {c.method}")
    return lines


def _contention_line(c: RunComparison) -> str:
    k = c.contention
    assert k is not None
    shares = []
    for who, value in (("this run", k.current_others_cpu), ("baseline", k.baseline_others_cpu)):
        if value is not None:
            shares.append(f"{who} {value:.0%}")
    text = "host CPU taken by other processes: " + (", ".join(shares) or "not measured")
    return text + (f" — {k.note}" if k.differs and k.note else "")


def describe(p: FigureChange, c: RunComparison) -> str:
    """A regressed part in one line, with what the steps themselves did."""
    from advisor.analysis.comparison import STEPS_KEY, describe_part, steps_phrase

    steps = next((f for f in c.parts if f.key == STEPS_KEY), None)
    share = f" ({p.step_share_pct:+.1f}% of a step)" if p.step_share_pct is not None else ""
    return f"{describe_part(p)}{share}; {steps_phrase(steps)} (versus {c.baseline_run})"


def annotation(c: RunComparison) -> tuple[str, str] | None:
    """(github level, message) of the comparison, None when there is nothing to say."""
    if c.failed:
        return "error", c.summary
    if c.verdict in ("contention", "not judgeable"):
        return "warning", f"{c.verdict}: {c.summary}"
    return None


def junit_cases(c: RunComparison) -> list[tuple[str, str | None, str]]:
    """(name, failure message or None, details) per figure: one test case per part of the fit."""
    cases = []
    for f in [*c.rates, *c.parts]:
        failure = None
        if f.regressed:
            failure = f"{f.label} slower beyond noise: {interval(f)}"
        cases.append((f.label, failure, figure_line(f)))
    return cases
