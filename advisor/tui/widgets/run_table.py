"""The Runs screen's table: its columns, their widths, and one row of cells per run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from advisor.numbers import count_text, readable
from advisor.tui.columns import shorten
from advisor.tui.model import SEVERITY_STYLE, STATUS_STYLE, RunView

# What a run is, its status, throughput and cost, and its top finding come first; the columns fit
# the terminal (140 columns show them all): the top finding is cut first, then the run id, then
# the sweep id (both in the middle: their ends tell them apart), and strategy and workers never.
COLUMNS = (
    "mark",
    "run",
    "date",
    "status",
    "samples/s",
    "samples/$",
    "top finding",
    "strategy",
    "workers",
    "sweep",
)
SORTABLE = COLUMNS[1:]
# Every width is set, none follows its cells: a width that follows its cells would re-measure the
# whole column on every update (quadratic over a 1,000-run store).
FIXED_WIDTHS = {
    "mark": 1,
    "date": 11,
    "status": 10,
    "samples/s": 9,
    "samples/$": 9,
    "top finding": 34,
    "workers": 7,
}
SHRINK = (("top finding", 16), ("run", 30), ("sweep", 16), ("run", 20), ("sweep", 12))


def _styled(text: str, style: str) -> str | Text:
    """Plain strings where no style is needed: the table measures them far faster than Text."""
    return Text(text, style=style) if style else text


def natural_widths(views: Iterable[RunView]) -> dict[str, int]:
    """What each column would take to show every run (and its header) whole."""
    widths = {column: FIXED_WIDTHS.get(column, len(column)) for column in COLUMNS}
    for view in views:
        r = view.row
        widths["run"] = max(widths["run"], len(r.run_id))
        widths["strategy"] = max(widths["strategy"], len(r.strategy or "—"))
        widths["sweep"] = max(widths["sweep"], len(r.sweep_id or ""))
    return widths


def cells(view: RunView, widths: Mapping[str, int] = FIXED_WIDTHS) -> list[str | Text]:
    r = view.row
    status = view.status
    top = view.digest.top if view.digest else None
    return [
        "●" if view.marked else " ",
        shorten(r.run_id, widths.get("run", len(r.run_id)), keep_end=True),
        view.date,
        _styled(("● " if status == "running" else "") + status, STATUS_STYLE.get(status, "")),
        f"{readable(view.samples_per_s, 1, compact=True):>{FIXED_WIDTHS['samples/s']}}",
        f"{count_text(view.samples_per_dollar):>{FIXED_WIDTHS['samples/$']}}",
        _styled(
            shorten(view.top_finding, widths["top finding"]),
            SEVERITY_STYLE[top.severity] if top else "dim",
        ),
        r.strategy or "—",
        f"{readable(r.workers):>7}",
        shorten(r.sweep_id or "", widths.get("sweep", len(r.sweep_id or "")), keep_end=True),
    ]


class RunTable(DataTable[object]):
    """The runs table; Enter opens the highlighted run (shown in the footer)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Findings")]
