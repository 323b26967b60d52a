"""The Scaling screen of a sweep: the report's table (strategy × workers), its recommendations,
and terminal plots of speedup against ideal and of epoch time."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from advisor.numbers import readable
from advisor.tui.messages import LoadFailed, TableLoaded
from advisor.tui.model import measured_best
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets.charts import LineChart

if TYPE_CHECKING:
    from advisor.analysis.scaling import Recommendation, Row, ScalingTable

# Columns of `advisor report` shown here (its formatters, so both say the same).
SHOWN = (
    "epoch time",
    "speedup",
    "efficiency",
    "samples/s",
    "samples/$",
    "GPU util",
    "Wh/epoch",
    "computation",
    "exposed comm.",
)
GOALS = {
    "samples_per_s": "fastest",
    "samples_per_dollar": "cheapest per sample",
    "energy": "least energy",
    "projection": "projected",
}


def columns() -> list[tuple[str, object]]:
    from advisor.render.scaling import SECTIONS

    found = {header: fmt for _, _, cols in SECTIONS for header, fmt in cols}
    return [(header, found[header]) for header in SHOWN if header in found]


def recommendation_text(rec: Recommendation) -> Text:
    goal = GOALS.get(rec.goal, rec.goal)
    value = f" — {readable(rec.value)} {rec.unit}".rstrip() if rec.value is not None else ""
    text = Text.assemble(
        (f"{goal}: ", "bold"), (f"{rec.strategy} ×{rec.workers}", "bold green"), value
    )
    if rec.projected:
        text.append("  (projected)", style="yellow")
    if rec.reason:
        text.append(f"\n    {rec.reason}")
    if rec.assumptions:
        text.append(f"\n    assumes: {'; '.join(rec.assumptions)}", style="dim")
    if rec.findings:
        text.append(f"\n    findings: {' '.join(rec.findings)}", style="dim")
    return text


class ScalingScreen(AdvisorScreen):
    AUTO_FOCUS = "#scaling"
    BINDINGS: ClassVar[list[BindingType]] = [*AdvisorScreen.BACK, Binding("r", "reload", "Reload")]

    def __init__(self, sweep: str | None) -> None:
        super().__init__()
        self.sweep = sweep
        self.table: ScalingTable | None = None

    @property
    def name_for_files(self) -> str:
        return self.sweep or self.data.root.name or "store"

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(("advisor", "bold"), " · scaling: reading the runs…"),
            id="title",
            classes="title",
        )
        yield Static(id="message", classes="message")
        with VerticalScroll(id="scaling-body"):
            yield DataTable(id="scaling", cursor_type="row", zebra_stripes=True)
            yield Static(id="recommendations", classes="panel")
            with Horizontal(id="plots"):
                yield LineChart("Speedup against ideal", "workers", "speedup", id="speedup")
                yield LineChart("Mean epoch time", "workers", "seconds", id="epoch-time")
            yield Static(id="notes", classes="hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#message", Static).display = False
        self.action_reload()

    def action_reload(self) -> None:
        sweep = self.sweep
        self.load(lambda: TableLoaded(self.data.table(sweep)), "the scaling table")

    @on(LoadFailed)
    def _failed(self, message: LoadFailed) -> None:
        box = self.query_one("#message", Static)
        box.display = True
        box.update(
            Text.assemble(
                ("No scaling table\n\n", "bold red"),
                message.error,
                ("\n\nA sweep is made with `advisor scale`; Escape goes back.", "dim"),
            )
        )
        self.query_one("#scaling-body").display = False

    @on(TableLoaded)
    def _loaded(self, message: TableLoaded) -> None:
        table = self.table = message.table
        self.query_one("#title", Static).update(
            Text.assemble(
                ("advisor", "bold"),
                " · scaling · ",
                (table.source, "bold"),
                f"  ({len(table.rows)} configurations, {sum(r.runs for r in table.rows)} runs)",
            )
        )
        if not table.rows:
            failed = [
                f"  {f.strategy} ×{f.workers} ({f.run_id}): {f.reason or 'failed'}"
                for f in table.failures
            ]
            self._failed(
                LoadFailed(
                    "\n".join([f"no finished runs in {table.source} to compare", *failed]),
                    "the scaling table",
                )
            )
            return
        grid = self.query_one("#scaling", DataTable)
        grid.clear(columns=True)
        # Columns nothing was measured for are left out; the notes below say what would fill them.
        cols = [(h, fmt) for h, fmt in columns() if any(fmt(r) != "—" for r in table.rows)]  # type: ignore[operator]
        grid.add_columns("strategy", "workers", *[h for h, _ in cols])
        best = {(b.strategy, b.workers) for b in measured_best(table) if b.goal == "fastest"}
        for row in table.rows:
            style = "bold green" if (row.strategy, row.workers) in best else ""
            grid.add_row(
                Text(row.strategy, style=style),
                Text(str(row.workers), style=style, justify="right"),
                *[Text(fmt(row), justify="right") for _, fmt in cols],  # type: ignore[operator]
            )
        self.query_one("#recommendations", Static).update(self._recommendations(table))
        self._plot(table)
        notes = [
            *table.notes,
            *[
                f"failed: {f.strategy} ×{f.workers} ({f.run_id}): {f.reason or 'failed'}"
                + (f" — hint: {f.hint}" if f.hint else "")
                for f in table.failures
            ],
        ]
        self.query_one("#notes", Static).update("\n".join(notes))
        grid.focus()

    @staticmethod
    def _recommendations(table: ScalingTable) -> Group:
        parts: list[Text] = [Text("Recommendations", style="bold underline")]
        if table.recommendations:
            parts += [recommendation_text(r) for r in table.recommendations]
        else:
            parts.append(Text("no recommendation yet", style="dim"))
        best = measured_best(table)
        if best:
            parts.append(
                Text(
                    "Measured best: "
                    + " · ".join(f"{b.goal} {b.strategy} ×{b.workers} ({b.value})" for b in best),
                    style="dim",
                )
            )
        return Group(*parts)

    def _plot(self, table: ScalingTable) -> None:
        workers = sorted({r.workers for r in table.rows})
        speed: dict[str, list[tuple[float, float]]] = {}
        epoch: dict[str, list[tuple[float, float]]] = {}
        for strategy in table.strategies:
            mine: list[Row] = sorted(
                (r for r in table.rows if r.strategy == strategy), key=lambda r: r.workers
            )
            speed[strategy] = [(r.workers, r.speedup) for r in mine if r.speedup is not None]
            epoch[strategy] = [(r.workers, r.epoch_s) for r in mine if r.epoch_s is not None]
        if any(speed.values()):
            base = min(workers)
            speed["ideal"] = [(n, n / base) for n in workers]
        self.query_one("#speedup", LineChart).show(
            speed, empty_note="no epoch times", xticks=workers
        )
        self.query_one("#epoch-time", LineChart).show(
            epoch, empty_note="no epoch times", xticks=workers
        )

    def text_plots(self) -> dict[str, str]:
        return {
            "speedup": self.query_one("#speedup", LineChart).as_text(),
            "epoch_time": self.query_one("#epoch-time", LineChart).as_text(),
        }

    def export(self) -> None:
        if self.table is None:
            self.notify("the table is not read yet", timeout=3)
            return
        table, name = self.table, self.name_for_files
        self.export_result(lambda: self.data.export_table(table, name))

    def plots(self) -> None:
        if self.table is None:
            self.notify("the table is not read yet", timeout=3)
            return
        table, name, text = self.table, self.name_for_files, self.text_plots()
        self.export_result(lambda: self.data.export_plots(name, text, table))

    def help_lines(self) -> list[tuple[str, str]]:
        return [
            (
                "table",
                (
                    "the fastest measured configuration is in green; speedup and efficiency are "
                    "against the fewest workers of each strategy"
                ),
            ),
            ("export", "e writes the scaling report as JSON, p the plots (text and PNG)"),
        ]
