"""The Findings screen of one run: what was measured and where its wall clock went (the time
budget's bar), counts and what to enable to decide more, the findings in rank order with severity
colours, and the detail pane of the highlighted one."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Select, Static

from advisor.diagnosis.report import fact_value
from advisor.numbers import count_text, percent, readable, strategy_label, workers_label
from advisor.tui.messages import LoadFailed, Navigate, ReportLoaded
from advisor.tui.model import (
    SEVERITY_STYLE,
    STATUS_STYLE,
    FindingFilter,
    counts,
)
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets.filter_bar import FilterBar
from advisor.tui.widgets.finding_detail import FindingDetail
from advisor.tui.widgets.goodput_bar import GoodputBar
from advisor.tui.widgets.memory_line import MemoryLine

if TYPE_CHECKING:
    from advisor.diagnosis.report import Finding, Report

SEVERITIES = ("error", "warning", "info")
STATUSES = ("fail", "unknown", "pass", "n/a", "error")
MAX_DECIDE_LINES = 3


def headline(report: Report) -> str:
    facts = report.facts
    parts = []
    for name, unit, show in (
        ("throughput.samples_per_s", "samples/s", lambda v: readable(v, 1)),
        ("cost.samples_per_dollar", "samples/$", count_text),
        ("throughput.measured_steps", "measured steps", lambda v: readable(v, 0)),
        ("speed_of_light.fraction", "of speed of light", lambda v: percent(v, fraction=True)),
    ):
        if name in facts:
            parts.append(f"{show(fact_value(facts, name))} {unit}")
    return " · ".join(parts) if parts else "no throughput measured"


class FindingsScreen(AdvisorScreen):
    AUTO_FOCUS = "#findings"
    BINDINGS: ClassVar[list[BindingType]] = [
        *AdvisorScreen.BACK,
        Binding("slash", "filter", "Filter"),
        Binding("f", "cycle('section')", "Section"),
        Binding("v", "cycle('severity')", "Severity"),
        Binding("l", "live", "Live"),
        Binding("w", "scaling", "Scaling"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.report: Report | None = None
        self.filter = FindingFilter()
        self.shown: list[Finding] = []
        self.choices: dict[str, list[str]] = {
            "section": [],
            "severity": list(SEVERITIES),
            "status": list(STATUSES),
        }

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(("advisor", "bold"), " · reading the run…"), id="title", classes="title"
        )
        yield Static(id="headline", classes="status")
        yield GoodputBar(id="budget", classes="status")
        yield MemoryLine(id="memory", classes="status")
        yield Static(id="counts", classes="status")
        yield Static(id="decide", classes="hint")
        yield Static(id="message", classes="message")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                with Horizontal(classes="selects"):
                    yield Select([], prompt="section: all", id="section")
                    yield Select(
                        [(s, s) for s in SEVERITIES], prompt="severity: all", id="severity"
                    )
                    yield Select([(s, s) for s in STATUSES], prompt="status: all", id="status")
                yield FilterBar("filter findings: words in code, name or message", id="filter")
                yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
            yield FindingDetail(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#findings", DataTable)
        for column in ("#", "status", "code", "name", "impact"):
            table.add_column(column, key=column)
        self.query_one("#message", Static).display = False
        self.query_one(MemoryLine).display = False
        self.action_reload()

    def action_reload(self) -> None:
        path = self.path
        fresh = self.report is not None
        self.load(lambda: ReportLoaded(path, self.data.report(path, fresh=fresh)), "the run")

    @on(ReportLoaded)
    def _loaded(self, message: ReportLoaded) -> None:
        report = self.report = message.report
        run = report.run
        details = ", ".join(
            str(v)
            for v in (
                run.status,
                run.backend,
                f"{strategy_label(run.strategy, run.tags)} "
                f"×{workers_label(run.num_workers or 1, run.tags)}",
                run.instance_type,
            )
            if v
        )
        self.query_one("#title", Static).update(
            Text.assemble(
                ("advisor", "bold"), " · run ", (run.run_id, "bold"), (f"  ({details})", "dim")
            )
        )
        self.query_one("#headline", Static).update(headline(report))
        self.query_one(GoodputBar).show(report.facts)
        self.query_one(MemoryLine).show(report.facts)
        self.query_one("#counts", Static).update(counts(report).line())
        self.query_one("#decide", Static).update(self._decide_text(report))
        sections = [(f"{code} {s.title}", code) for code, s in report.coverage.sections.items()]
        self.query_one("#section", Select).set_options(sections)
        self.choices["section"] = [code for _, code in sections]
        self._fill()
        self.query_one("#findings", DataTable).focus()

    @staticmethod
    def _decide_text(report: Report) -> Text:
        groups = report.unknown_by_measure()
        if not groups:
            return Text(
                "Every rule was decided." if not report.summary.unknown else "", style="green"
            )
        text = Text.assemble(
            ("To decide more", "bold"),
            (f" ({report.summary.unknown} rules unknown):", "dim"),
            no_wrap=True,
            overflow="ellipsis",
        )
        for how, codes in groups[:MAX_DECIDE_LINES]:
            text.append(f"\n  {how} ")
            text.append(f"({' '.join(codes)})", style="dim")
        if len(groups) > MAX_DECIDE_LINES:
            more = len(groups) - MAX_DECIDE_LINES
            text.append(
                f"\n  … {more} more way{'' if more == 1 else 's'}: status unknown lists them",
                style="dim",
            )
        return text

    @on(LoadFailed)
    def _failed(self, message: LoadFailed) -> None:
        box = self.query_one("#message", Static)
        box.display = True
        box.update(
            Text.assemble(
                ("Cannot show this run\n\n", "bold red"),
                message.error,
                ("\n\nEscape goes back to the runs.", "dim"),
            )
        )
        self.query_one("#body").display = False

    def _fill(self) -> None:
        if self.report is None:
            return
        table = self.query_one("#findings", DataTable)
        table.clear()
        self.shown = [f for f in self.report.findings if self.filter.matches(f)]
        rank = 0
        for f in self.shown:
            if f.status == "fail":
                rank += 1
                status = Text(f.severity, style=SEVERITY_STYLE[f.severity])
            else:
                status = Text(f.status, style=STATUS_STYLE.get(f.status, ""))
            style = SEVERITY_STYLE[f.severity] if f.status == "fail" else "dim"
            table.add_row(
                str(rank) if f.status == "fail" else "",
                status,
                Text(f.code, style=style),
                f.name,
                percent(f.impact, 0, fraction=True) if f.impact and f.status == "fail" else "",
                key=f.code,
            )
        self._show_detail()

    def _show_detail(self) -> None:
        table = self.query_one("#findings", DataTable)
        finding = (
            self.shown[table.cursor_row]
            if self.shown and 0 <= table.cursor_row < len(self.shown)
            else None
        )
        docs = self.data.rule_docs(finding.code) if finding else None
        self.query_one(FindingDetail).show(finding, docs)

    @on(DataTable.RowHighlighted, "#findings")
    def _highlighted(self) -> None:
        self._show_detail()

    @on(Select.Changed)
    def _select(self, event: Select.Changed) -> None:
        value = None if event.select.is_blank() else str(event.value)
        name = event.select.id or ""
        self.filter = FindingFilter(**{**self.filter.__dict__, name: value})
        self._fill()

    def action_cycle(self, name: str) -> None:
        select = self.query_one(f"#{name}", Select)
        values: list[str | None] = [None, *self.choices[name]]
        current = None if select.is_blank() else str(select.value)
        following = values[(values.index(current) + 1) % len(values)] if current in values else None
        if following is None:
            select.clear()
        else:
            select.value = following

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.QueryChanged)
    def _text(self, message: FilterBar.QueryChanged) -> None:
        self.filter = FindingFilter(**{**self.filter.__dict__, "text": message.query})
        self._fill()

    @on(FilterBar.Done)
    def _text_closed(self) -> None:
        self.query_one("#findings", DataTable).focus()

    def action_live(self) -> None:
        self.post_message(Navigate("live", path=self.path))

    def action_scaling(self) -> None:
        self.post_message(Navigate("scaling", path=self.path))

    def export(self) -> None:
        if self.report is None:
            self.notify("the report is not read yet", timeout=3)
            return
        report = self.report
        self.export_result(lambda: self.data.export_report(report))

    def help_lines(self) -> list[tuple[str, str]]:
        return [
            ("filters", "f cycles the section (M I S C G D P), v the severity; / filters by words"),
            (
                "detail",
                "the right pane shows the highlighted finding: evidence, fix, documentation",
            ),
        ]
