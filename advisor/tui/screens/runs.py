"""The Runs screen: every run of the store, sortable and filterable; mark runs to compare them.

The table appears from the manifests alone; throughput, cost and the top finding are computed
in a background thread, the rows on screen first, and arrive in batches (a store of 1,000 runs
is interactive at once and fills in behind). Running runs are looked at again every few seconds.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from advisor.errors import AdvisorError
from advisor.tui.columns import fit_widths
from advisor.tui.messages import DigestsLoaded, EntriesLoaded, LoadFailed, Navigate
from advisor.tui.model import (
    RunFilter,
    RunView,
    sort_views,
)
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets.filter_bar import FilterBar
from advisor.tui.widgets.run_table import (
    COLUMNS,
    SHRINK,
    SORTABLE,
    RunTable,
    cells,
    natural_widths,
)

if TYPE_CHECKING:
    from advisor.service.listing import RunDigest

BATCH_S = 0.5  # digests are sent to the UI at most this often (each batch redraws the table)
FIRST_ROWS, CHUNK_ROWS = 100, 100  # rows added at once, then per refresh
IDLE_S = 0.3  # the background fill waits this long after the last key press or mouse event
REFRESH_S = 2.0  # running runs are looked at again this often


class RunsScreen(AdvisorScreen):
    AUTO_FOCUS = "#runs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open('findings')", "Findings", show=False),
        Binding("l", "open('live')", "Live"),
        Binding("w", "open('scaling')", "Scaling"),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse order", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.views: dict[str, RunView] = {}
        self.filter = RunFilter()
        self.sort_column = "date"
        self.reverse = True
        self.left = 0
        self._queue: dict[str, None] = {}  # paths still to digest, in order
        self._wanted: list[str] = []  # paths on screen: digested first
        self._loaded = False
        self._pending: list[RunView] = []  # rows of the current order not yet in the table
        self._generation = 0
        self._shown = 0
        self.widths: dict[str, int] = {}  # the columns' widths as the table has them

    def compose(self) -> ComposeResult:
        yield Static(id="title", classes="title")
        yield Static(id="status", classes="status")
        yield FilterBar(
            "filter: words, tag:key=value, strategy:, status:, sweep:, workers:", id="filter"
        )
        yield Static(id="empty", classes="message")
        yield RunTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self._fit_columns()
        self.query_one("#title", Static).update(
            Text.assemble(("advisor", "bold"), f" · runs in {self.data.root}")
        )
        self.query_one("#empty", Static).display = False
        self.set_interval(0.3, self._note_visible)
        self.set_interval(REFRESH_S, self._refresh_running)
        self.action_reload()

    # -- loading --------------------------------------------------------------------------------
    def action_reload(self) -> None:
        self.data.reload()
        self._loaded = False
        self._status_line("reading manifests…")
        try:
            rows = self.data.entries()
        except AdvisorError as exc:
            self.post_message(LoadFailed(str(exc), "runs"))
        else:
            self.post_message(EntriesLoaded(rows))

    @on(EntriesLoaded)
    def _entries(self, message: EntriesLoaded) -> None:
        self.views = {row.path: RunView(row) for row in message.rows}
        self._loaded = True
        empty = self.query_one("#empty", Static)
        empty.display = not self.views
        empty.update(
            f"No runs in {self.data.root}.\n\nRecord one with AdvisorCallback in model.fit, "
            "or run `advisor demo`, then press r to reload."
        )
        self._refill()
        self._queue = dict.fromkeys(v.key for v in self._ordered())
        self.left = len(self._queue)
        self._note_visible()
        self.call_after_refresh(
            self._digest_all
        )  # the list is painted before the fill competes for the CPU
        self._status_line()

    @work(thread=True, exclusive=True, group="digest", exit_on_error=False)
    def _digest_all(self) -> None:
        worker = get_current_worker()
        batch: list[tuple[str, RunDigest]] = []
        sent = time.monotonic()
        while not worker.is_cancelled:
            if not self._may_work():
                time.sleep(0.05)
                continue
            path = self._next_path()
            if path is None:
                break
            batch.append((path, self.data.digest(path)))
            if time.monotonic() - sent >= BATCH_S:
                self.post_message(DigestsLoaded(batch, len(self._queue)))
                batch, sent = [], time.monotonic()
        if batch or not worker.is_cancelled:
            self.post_message(DigestsLoaded(batch, len(self._queue)))

    def _may_work(self) -> bool:
        """Fill in rows only while this screen shows and nobody is typing or scrolling: a CPU-bound
        thread holding the GIL would make every key press wait (see benchmarks/tui_load.py)."""
        return self.is_current and time.monotonic() - self.advisor.last_input >= IDLE_S

    def _next_path(self) -> str | None:
        for path in self._wanted:
            if path in self._queue:
                del self._queue[path]
                return path
        if not self._queue:
            return None
        path = next(iter(self._queue))
        del self._queue[path]
        return path

    @on(DigestsLoaded)
    def _digests(self, message: DigestsLoaded) -> None:
        table = self.query_one(DataTable)
        rows = table.rows
        for path, digest in message.digests:
            view = self.views.get(path)
            if view is None:
                continue
            view.digest = digest
            if path in rows:
                for column, value in zip(COLUMNS, cells(view, self.widths)):
                    if column in ("status", "samples/s", "samples/$", "top finding"):
                        table.update_cell(path, column, value)
        self.left = message.left
        if not self.left and self.sort_column in (
            "samples/s",
            "samples/$",
            "top finding",
            "status",
        ):
            self._refill()
        self._status_line()

    def _note_visible(self) -> None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return
        top = int(table.scroll_offset.y)
        rows = table.ordered_rows[top : top + max(table.size.height, 1)]
        self._wanted = [str(row.key.value) for row in rows]

    def _refresh_running(self) -> None:
        running = [v.key for v in self.views.values() if v.status == "running"]
        if running and not self._queue:
            self._queue = dict.fromkeys(running)
            self._digest_all()

    @on(LoadFailed)
    def _failed(self, message: LoadFailed) -> None:
        self.notify(
            message.error, title=f"cannot read {message.what}".strip(), severity="error", timeout=10
        )
        self._status_line(message.error)

    # -- the table ------------------------------------------------------------------------------
    def on_resize(self) -> None:
        if self.widths and self._wanted_widths() != self.widths:
            self._refill()

    def _wanted_widths(self) -> dict[str, int]:
        table = self.query_one(DataTable)
        width = table.size.width or self.app.size.width
        padding = 2 * table.cell_padding * len(COLUMNS)
        available = (
            width - padding - table.styles.scrollbar_size_vertical
        )  # room for the scroll bar always
        return fit_widths(natural_widths(self.views.values()), available, SHRINK)

    def _fit_columns(self) -> None:
        """Give the columns the widths the terminal has room for (the table's rows go with them)."""
        widths = self._wanted_widths()
        if widths == self.widths:
            return
        table = self.query_one(DataTable)
        table.clear(columns=True)
        for column in COLUMNS:
            table.add_column(" " if column == "mark" else column, key=column, width=widths[column])
        self.widths = widths

    def _ordered(self) -> list[RunView]:
        shown = (
            [v for v in self.views.values() if self.filter.matches(v)]
            if self.filter
            else list(self.views.values())
        )
        return sort_views(shown, self.sort_column, self.reverse)

    def _refill(self) -> None:
        """Show the runs in the current order and filter: the first screenfuls at once, the rest
        in chunks after each refresh (the table measures every cell it is given)."""
        table = self.query_one(DataTable)
        current = self.current()
        table.clear()
        self._fit_columns()
        self._generation += 1
        self._pending = self._ordered()
        self._shown = len(self._pending)
        upto = FIRST_ROWS
        if current is not None:
            index = next((i for i, v in enumerate(self._pending) if v.key == current.key), 0)
            upto = max(upto, index + 1)
        self._add_rows(upto)
        if current is not None and current.key in table.rows:
            table.move_cursor(row=table.get_row_index(current.key), animate=False)
        self._status_line()
        if self._pending:
            self.call_after_refresh(self._add_more, self._generation)

    def _add_rows(self, count: int) -> None:
        table = self.query_one(DataTable)
        chunk, self._pending = self._pending[:count], self._pending[count:]
        for view in chunk:
            table.add_row(*cells(view, self.widths), key=view.key)

    def _add_more(self, generation: int) -> None:
        if generation != self._generation or not self.is_mounted:
            return  # the order or the filter changed since: that refill adds its own rows
        self._add_rows(CHUNK_ROWS)
        if self._pending:
            self.call_after_refresh(self._add_more, generation)

    def _status_line(self, note: str | None = None) -> None:
        if not self.is_mounted:
            return
        shown = self._shown
        parts = [note] if note else []
        if self._loaded:
            total = len(self.views)
            noun = "run" if total == 1 else "runs"
            parts.append(f"{shown:,} of {total:,} {noun}" if self.filter else f"{total:,} {noun}")
            if self.left:
                parts.append(f"reading {self.left:,}…")
            marked = sum(v.marked for v in self.views.values())
            if marked:
                parts.append(f"{marked} marked (c compares)")
            parts.append(f"sorted by {self.sort_column} {'↓' if self.reverse else '↑'}")
        self.query_one("#status", Static).update(" · ".join(parts))

    def current(self) -> RunView | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.views.get(str(key))

    # -- actions --------------------------------------------------------------------------------
    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.post_message(Navigate("findings", path=str(event.row_key.value)))

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column not in SORTABLE:
            return
        if column == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = column, column in ("date", "samples/s", "samples/$")
        self._refill()

    def action_open(self, view: str) -> None:
        current = self.current()
        if current is None:
            self.notify("no run selected", timeout=3)
        elif view == "scaling":
            self.post_message(Navigate("scaling", sweep=current.row.sweep_id))
        else:
            self.post_message(Navigate(view, path=current.key))  # type: ignore[arg-type]

    def action_mark(self) -> None:
        current = self.current()
        if current is None:
            return
        current.marked = not current.marked
        table = self.query_one(DataTable)
        table.update_cell(current.key, "mark", "●" if current.marked else " ")
        table.action_cursor_down()
        self._status_line()

    def action_compare(self) -> None:
        marked = [v.key for v in self._ordered() if v.marked]
        if len(marked) < 2:
            self.notify("mark two or more runs with space, then press c", timeout=5)
            return
        self.post_message(Navigate("compare", paths=tuple(marked)))

    def action_sort(self) -> None:
        index = (SORTABLE.index(self.sort_column) + 1) % len(SORTABLE)
        self.sort_column = SORTABLE[index]
        self.reverse = self.sort_column in ("date", "samples/s", "samples/$")
        self._refill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._refill()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.QueryChanged)
    def _filter_changed(self, message: FilterBar.QueryChanged) -> None:
        self.filter = RunFilter.parse(message.query)
        self._refill()

    @on(FilterBar.Done)
    def _filter_closed(self) -> None:
        self.query_one(DataTable).focus()

    def export(self) -> None:
        current = self.current()
        if current is None:
            self.notify("no run selected", timeout=3)
            return
        path = current.key
        self.export_result(lambda: self.data.export_report(self.data.report(path)))

    def help_lines(self) -> list[tuple[str, str]]:
        return [
            (
                "filter",
                (
                    "words match anywhere; tag:key=value, strategy:mirrored, status:running, "
                    "sweep:ID, workers:4 match one field"
                ),
            ),
            ("sort", "s cycles the column, S reverses; a click on a header sorts by it"),
            ("compare", "space marks runs, c shows the marked runs side by side"),
        ]
