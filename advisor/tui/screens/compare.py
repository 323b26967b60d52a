"""The Compare screen: marked runs side by side (throughput, cost, the top finding) and the
findings whose outcome differs between them."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from advisor.tui.messages import LoadFailed, ReportsLoaded
from advisor.tui.model import SEVERITY_STYLE, Comparison, ExportResult, compare
from advisor.tui.screens.base import AdvisorScreen

if TYPE_CHECKING:
    from advisor.analysis.comparison_model import RunComparison
    from advisor.diagnosis.report import Report


def _parts_text(run_ids: list[str], comparisons: list[RunComparison | None]) -> Text:
    """Each run against the first, part by part, with 95 % intervals (advisor check --baseline)."""
    from advisor.render.comparison import comparison_lines

    text = Text("Against the first run, part by part (95% intervals)", style="bold underline")
    for run_id, comparison in zip(run_ids[1:], comparisons, strict=False):
        text.append(f"\n{run_id}\n", style="bold")
        if comparison is None:
            text.append("  not comparable: samples/s is not measured on both runs\n", style="dim")
            continue
        for line in comparison_lines(comparison)[:-1]:
            text.append(f"  {line}\n", style="red" if "REGRESS" in line else "")
    return text


def _status_cell(label: str) -> Text:
    if label.startswith("fail: "):
        severity = label.split(": ", 1)[1]
        return Text(label, style=SEVERITY_STYLE.get(severity, "bold"))
    return Text(label, style="green" if label == "pass" else "dim")


class CompareScreen(AdvisorScreen):
    AUTO_FOCUS = "#metrics"
    BINDINGS: ClassVar[list[BindingType]] = [*AdvisorScreen.BACK]

    def __init__(self, paths: tuple[str, ...]) -> None:
        super().__init__()
        self.paths = paths
        self.comparison: Comparison | None = None
        self.reports: list[Report] = []

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(("advisor", "bold"), f" · comparing {len(self.paths)} runs…"),
            id="title",
            classes="title",
        )
        yield Static(id="message", classes="message")
        with VerticalScroll(id="compare-body"):
            yield DataTable(id="metrics", cursor_type="row", zebra_stripes=True)
            yield Static(Text("Findings that differ", style="bold underline"), classes="panel")
            yield DataTable(id="differing", cursor_type="row", zebra_stripes=True)
            yield Static(id="parts", classes="panel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#message", Static).display = False
        paths = self.paths

        def read() -> ReportsLoaded:
            reports = [self.data.report(p) for p in paths]
            return ReportsLoaded(reports, [self.data.comparison(paths[0], p) for p in paths[1:]])

        self.load(read, "the runs")

    @on(ReportsLoaded)
    def _loaded(self, message: ReportsLoaded) -> None:
        self.reports = message.reports
        cmp = self.comparison = compare(message.reports)
        self.query_one("#title", Static).update(
            Text.assemble(
                ("advisor", "bold"),
                f" · comparing {len(cmp.run_ids)} runs (percentages against the first)",
            )
        )
        metrics = self.query_one("#metrics", DataTable)
        metrics.add_column("", key="metric")
        for run_id in cmp.run_ids:
            metrics.add_column(run_id)
        for label, values in cmp.metrics:
            metrics.add_row(Text(label, style="bold"), *values)
        differing = self.query_one("#differing", DataTable)
        differing.add_column("code")
        differing.add_column("rule")
        for run_id in cmp.run_ids:
            differing.add_column(run_id)
        for code, name, statuses in cmp.differing:
            differing.add_row(code, name, *[_status_cell(s) for s in statuses])
        if not cmp.differing:
            differing.add_row(
                "—", "every rule has the same outcome in these runs", *[""] * len(cmp.run_ids)
            )
        self.query_one("#parts", Static).update(_parts_text(cmp.run_ids, message.comparisons))
        metrics.focus()

    @on(LoadFailed)
    def _failed(self, message: LoadFailed) -> None:
        box = self.query_one("#message", Static)
        box.display = True
        box.update(Text.assemble(("Cannot compare these runs\n\n", "bold red"), message.error))
        self.query_one("#compare-body").display = False

    def export(self) -> None:
        reports = list(self.reports)
        if not reports:
            self.notify("the runs are not read yet", timeout=3)
            return

        def write() -> ExportResult:
            result = ExportResult()
            for report in reports:
                result.written += self.data.export_report(report).written
            return result

        self.export_result(write)
