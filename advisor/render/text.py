"""Text for people: failures ranked (the first is what to fix first), then what was not measured
and how to measure it, then coverage. Rich does the wrapping and, on a terminal, the colour."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from advisor.diagnosis.phrases import is_changes
from advisor.diagnosis.report import fact_value
from advisor.diagnosis.template import format_value
from advisor.numbers import percent, strategy_label
from advisor.render.whatif import shared_host_note

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import RunComparison
    from advisor.analysis.history import HistoryGate
    from advisor.diagnosis.report import Finding, Report

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
LABEL = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def _console(color: bool, width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    return console, buffer


def render_many(reports: list[Report], color: bool = False, width: int = 100, **_: Any) -> str:
    console, buffer = _console(color, width)
    for index, report in enumerate(reports):
        if index:
            console.print()
            console.rule(style="dim")
        _report(console, report)
    # Rich pads wrapped blocks to the full width; trailing blanks only get in the way of diffs.
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _headline(report: Report) -> Text:
    facts = report.facts
    parts = []
    for name, unit, spec in (
        ("throughput.samples_per_s", "samples/s", ",.1f"),
        ("cost.samples_per_dollar", "samples/$", ",.0f"),
        ("throughput.measured_steps", "measured steps", ""),
        ("mfu", "MFU", ".1%"),
    ):
        if name in facts:
            value = format_value(fact_value(facts, name), spec)
            parts.append(f"{value} {unit}" if name != "mfu" else f"{unit} {value}")
    return Text(
        "  " + " · ".join(parts) if parts else "  no throughput measured",
        style="dim" if not parts else "",
    )


def _report(console: Console, report: Report) -> None:
    run = report.run
    details = ", ".join(
        str(v)
        for v in (
            run.status,
            run.backend,
            strategy_label(run.strategy, run.tags)
            if run.strategy not in (None, "default", "single")
            else None,
            run.instance_type,
        )
        if v
    )
    console.print(
        Text.assemble(
            ("advisor check", "bold"),
            f" · run {run.run_id}",
            (f" ({details})" if details else "", "dim"),
        )
    )
    console.print(_headline(report))
    console.print()
    _incomplete(console, report)
    _findings(console, report)
    _whatif(console, report)
    _undecided(console, report)
    if report.regression is not None:
        _regression(console, report)
    for problem in report.errors:
        console.print(Text(f"note: {problem}", style="dim"))
    _coverage(console, report)


def _incomplete(console: Console, report: Report) -> None:
    if report.incomplete:
        console.print(
            Text(
                "Not judgeable: advisor check exits 3 (--allow-incomplete judges it anyway)",
                style="bold red",
            )
        )
        for reason in report.incomplete:
            console.print(Padding(Text(f"- {reason}"), (0, 0, 0, 2)))
        console.print()


def _findings(console: Console, report: Report) -> None:
    failures = report.failures
    if failures:
        console.print(Text(f"Findings, most costly first ({len(failures)})", style="bold"))
        shared = shared_host_note(report.facts)
        for rank, finding in enumerate(failures, start=1):
            _failure(console, rank, finding, shared)
    else:
        console.print(Text("No findings: every decided rule passed.", style="green"))


def _undecided(console: Console, report: Report) -> None:
    """The rules that errored, were not measured or need a human; then those passed and n/a."""
    errors = [f for f in report.findings if f.status == "error"]
    if errors:
        console.print()
        console.print(Text(f"Rules that could not be evaluated ({len(errors)})", style="bold red"))
        for f in errors:
            console.print(Padding(Text(f"{f.code} {f.name}: {f.error}"), (0, 0, 0, 2)))

    unknown = [f for f in report.findings if f.status == "unknown"]
    measurable = [f for f in unknown if f.missing]
    advice = [f for f in unknown if not f.missing]
    if measurable:
        console.print()
        console.print(
            Text(f"Not measured ({len(measurable)} rules); to decide them:", style="bold")
        )
        for how, codes in report.unknown_by_measure():
            console.print(Padding(Text(" ".join(codes), style="bold"), (0, 0, 0, 2)))
            console.print(Padding(Text(how), (0, 0, 0, 6)))
    if advice:
        console.print()
        console.print(
            Text.assemble(
                ("Needs a human decision: ", "bold"), " ".join(f"{f.code} {f.name}" for f in advice)
            )
        )
    na = [f.code for f in report.findings if f.status == "n/a"]
    passed = [f.code for f in report.findings if f.status == "pass"]
    if passed:
        console.print(Text.assemble(("Passed: ", "bold green"), " ".join(passed)))
    if na:
        console.print(Text.assemble(("Not applicable: ", "bold"), " ".join(na)))


def _coverage(console: Console, report: Report) -> None:
    console.print()
    cov = report.coverage
    console.print(Text.assemble(("Checklist coverage: ", "bold"), coverage_line(report)))
    sections = " · ".join(f"{code} {s.decided}/{s.total}" for code, s in cov.sections.items())
    if sections:
        console.print(Padding(Text(f"decided per section: {sections}", style="dim"), (0, 0, 0, 2)))
    if cov.to_decide:
        parts = "; ".join(
            f"{g.enable} ({len(g.rules)}: {' '.join(g.rules)})" for g in cov.to_decide
        )
        console.print(Padding(Text(f"to decide the unknown: {parts}", style="dim"), (0, 0, 0, 2)))
    counts = report.summary.by_severity
    tally = ", ".join(f"{counts[k]} {k}" for k in ("error", "warning", "info") if counts.get(k))
    fail_on = report.settings.fail_on if report.settings else "warning"
    console.print(Text(f"Summary: {tally or 'no failures'}; fail level {fail_on}", style="dim"))


def coverage_line(report: Report) -> str:
    """``29/55 rules decided (53%: passed or failed) · 18 n/a · 8 unknown``."""
    cov = report.coverage
    return (
        f"{cov.decided}/{cov.total} rules decided ({percent(cov.fraction, 0, fraction=True)}: "
        "passed or failed) · "
        f"{cov.not_applicable} n/a · {cov.unknown} unknown"
    )


def _failure(console: Console, rank: int, f: Finding, shared: str | None = None) -> None:
    head = Text.assemble(
        f"{rank:>2}. ",
        (f"{LABEL[f.severity]:<7}", SEVERITY_STYLE[f.severity]),
        " ",
        (f.code, "bold"),
        f" {f.name}",
        (f"  impact ~{percent(f.impact, 0, fraction=True)}" if f.impact else "", "dim"),
    )
    console.print(head)
    console.print(Padding(Text(f.message), (0, 0, 0, 4)))
    if f.measured is not None:
        m = f.measured
        gain = Text.assemble(
            (m.text, "bold"), f" — {m.candidate}" + (f": {m.label}" if m.label else "")
        )
        console.print(Padding(gain, (0, 0, 0, 4)))
        if shared:  # the gain holds for the shared host it was measured on
            console.print(Padding(Text(f"({shared})", style="dim"), (0, 0, 0, 4)))
    if f.fix:
        console.print(Padding(Text.assemble(("fix: ", "bold"), f.fix), (0, 0, 0, 4)))
    if f.evidence:
        shown = ", ".join(
            f"{e.fact}={_short(format_value(e.value))}"
            for e in f.evidence
            if not _is_prose(e.value)
        )
        thresholds = ", ".join(f"{k}={format_value(v)}" for k, v in f.thresholds.items())
        line = f"evidence: {shown}" + (f" (thresholds: {thresholds})" if thresholds else "")
        console.print(Padding(Text(line, style="dim"), (0, 0, 0, 4)))
    if f.note:
        console.print(Padding(Text(f"note: {f.note}", style="dim"), (0, 0, 0, 4)))


def _whatif(console: Console, report: Report) -> None:
    """The measured what-if's table, when the run has one."""
    from advisor.render.whatif import backends_parts, whatif_heading, whatif_table

    backends = backends_parts(report.facts)
    if backends:
        console.print()
    for part in backends:
        console.print(part)
    heading = whatif_heading(report.facts)
    if heading is None:
        return
    console.print()
    console.print(Text(heading, style="bold"))
    table = whatif_table(report.facts)
    if table is not None:
        console.print(Padding(table, (0, 0, 0, 2)))


def _is_prose(value: object) -> bool:
    """Long text and change lists: the message and the fix say them already."""
    return (isinstance(value, str) and len(value) > 60) or is_changes(value)


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _regression(console: Console, report: Report) -> None:
    reg = report.regression
    assert reg is not None
    console.print()
    verdict = ("REGRESSION", "bold red") if reg.failed else ("ok", "green")
    if reg.history is not None:
        _history(console, reg.history)
    if reg.comparison is not None:
        _comparison(console, reg.comparison)
        return
    if not reg.metrics:
        return
    console.print(
        Text.assemble(
            ("Versus baseline ", "bold"),
            reg.baseline_run,
            f" (max drop {reg.max_regression_pct:g}%): ",
            verdict,
        )
    )
    for m in reg.metrics:
        if m.change_pct is None:
            console.print(Padding(Text(f"{m.unit}: {m.note}", style="dim"), (0, 0, 0, 2)))
        else:
            style = "red" if m.regressed else ""
            spec = ",.0f" if m.unit == "samples/$" else ",.1f"
            before, after = format_value(m.baseline, spec), format_value(m.current, spec)
            line = f"{m.unit}: {before} → {after} ({m.change_pct:+.1f}%)"
            console.print(Padding(Text(line, style=style), (0, 0, 0, 2)))


def _comparison(console: Console, comparison: RunComparison) -> None:
    from advisor.render.comparison import comparison_lines

    head, *rest = comparison_lines(comparison)
    style = (
        "bold red"
        if comparison.failed
        else "bold yellow"
        if comparison.verdict != "no regression"
        else "green"
    )
    limit = f" (size that matters {comparison.max_regression_pct:g}%): "
    console.print(Text.assemble(("Versus baseline ", "bold"), comparison.baseline_run, limit))
    console.print(Padding(Text(head, style=style), (0, 0, 0, 2)))
    for line in rest:
        console.print(Padding(Text(line, style="red" if "REGRESSED" in line else ""), (0, 0, 0, 2)))


def _history(console: Console, gate: HistoryGate) -> None:
    words = {"regression": "REGRESSION", "no regression": "ok", "too short": "TOO SHORT TO JUDGE"}
    style = {"regression": "bold red", "no regression": "green"}.get(gate.verdict, "bold yellow")
    console.print(Text.assemble(("History gate ", "bold"), gate.selection, ": "))
    console.print(
        Padding(Text(f"{words[gate.verdict]}: {gate.summary}", style=style), (0, 0, 0, 2))
    )
