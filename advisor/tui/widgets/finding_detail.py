"""The detail pane of a finding: message, evidence, thresholds, fix, measured gains, and the
rule's documentation (what it checks, why it matters, how to fix, references)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from advisor.numbers import percent
from advisor.tui.model import SEVERITY_STYLE, STATUS_STYLE, measured_gains

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding

DOC_TITLES = (("what", "What it checks"), ("why", "Why it matters"), ("how", "How to fix"))


def _value(value: Any) -> str:
    from advisor.diagnosis.template import format_value

    text = format_value(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _is_prose(value: Any) -> bool:
    from advisor.diagnosis.phrases import is_changes

    return (isinstance(value, str) and len(value) > 80) or is_changes(value)


def detail_renderable(finding: Finding, docs: Mapping[str, Any] | None) -> RenderableType:
    """Everything the pane shows about one finding, as one rich renderable."""
    parts: list[RenderableType] = []
    status = finding.status
    head = Text.assemble((f"{finding.code} ", "bold"), (finding.name, "bold"), "  ")
    if status == "fail":
        head.append(finding.severity.upper(), SEVERITY_STYLE[finding.severity])
    else:
        head.append(status, STATUS_STYLE.get(status, ""))
    if finding.impact:
        head.append(f"  impact ~{percent(finding.impact, 0, fraction=True)}", "dim")
    parts += [head, Text(finding.summary, style="italic"), Text("")]
    parts.append(Text(finding.message))
    if finding.fix:
        parts += [Text(""), Text.assemble(("Fix: ", "bold green"), finding.fix)]
    gains = measured_gains(finding)
    if gains:
        parts += [Text(""), Text("Measured", style="bold")]
        parts += [Text.assemble(f"  {g.label}: ", (g.text, "bold")) for g in gains]
    if finding.evidence or finding.thresholds:
        table = Table(
            title="Evidence",
            title_justify="left",
            title_style="bold",
            expand=False,
            show_edge=False,
            pad_edge=False,
        )
        table.add_column("fact")
        table.add_column("value", justify="right")
        table.add_column("threshold", justify="right")
        for e in finding.evidence:
            if not _is_prose(e.value):  # change lists and long text: the message and fix say them
                table.add_row(e.fact, f"{_value(e.value)} {e.unit}".rstrip(), "")
        for name, value in finding.thresholds.items():
            table.add_row(Text(f"{finding.code}.{name}", style="dim"), "", _value(value))
        parts += [Text(""), table]
    if finding.missing:
        parts += [Text(""), Text.assemble(("Not measured: ", "bold"), ", ".join(finding.missing))]
        if finding.measure:
            parts.append(Text.assemble(("To measure: ", "bold"), finding.measure))
    if finding.note:
        parts += [Text(""), Text(f"note: {finding.note}", style="dim")]
    if finding.error:
        parts += [Text(""), Text(f"error: {finding.error}", style="bold magenta")]
    parts += [
        Text(""),
        Text.assemble(
            ("Documentation: ", "bold"), finding.docs, (f"  (advisor rule {finding.code})", "dim")
        ),
    ]
    if docs:
        for key, title in DOC_TITLES:
            if docs.get(key):
                parts += [Text(""), Text(title, style="bold underline"), Markdown(str(docs[key]))]
        refs = docs.get("references") or []
        if refs:
            parts += [Text(""), Text("References", style="bold underline")]
            parts += [Text(f"  • {r}") for r in refs]
    return Group(*parts)


class FindingDetail(VerticalScroll):
    """A scrolling pane showing one finding (or a hint when none is selected)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.code: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            Text("Select a finding to see its evidence, fix and documentation.", style="dim"),
            id="detail-body",
        )

    def show(self, finding: Finding | None, docs: Mapping[str, Any] | None) -> None:
        body = self.query_one("#detail-body", Static)
        if finding is None:
            self.code = None
            body.update(Text("No finding matches the filter.", style="dim"))
            return
        self.code = finding.code
        body.update(detail_renderable(finding, docs))
        self.scroll_home(animate=False)
