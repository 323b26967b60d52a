"""The Live screen: throughput, utilization and memory of a run as its files grow.

A thread polls the run (only the bytes appended since the last poll are read) and posts a
:class:`~advisor.tui.messages.LiveUpdate` when something changed; queued updates merge
(``can_replace``), so the charts redraw at most once per poll however fast the writer is. When
the run stops running the screen turns final and stops polling.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from advisor.errors import AdvisorError
from advisor.numbers import readable
from advisor.tui.messages import LiveUpdate, LoadFailed, Navigate
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets.charts import LineChart
from advisor.tui.widgets.memory_line import live_memory_text

if TYPE_CHECKING:
    from advisor.analysis.live import LiveSnapshot


def stats_line(snap: LiveSnapshot, now: float | None = None) -> str:
    parts = [
        f"latest {readable(snap.samples_per_s, 1)} samples/s",
        f"mean {readable(snap.mean_samples_per_s, 1)}",
        f"{len(snap.throughput)} windows",
        f"{snap.epochs} epochs",
        f"{snap.records:,} records",
    ]
    if snap.warmup_windows:
        parts.append(
            f"{snap.warmup_windows} warm-up window{'s' if snap.warmup_windows > 1 else ''} not "
            "charted"
        )
    if not snap.final and snap.last_record_t is not None:
        age = max(0.0, (now if now is not None else time.time()) - snap.last_record_t)
        parts.append(f"last record {age:.0f} s ago")
    return " · ".join(parts)


class LiveScreen(AdvisorScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *AdvisorScreen.BACK,
        Binding("enter", "findings", "Findings"),
    ]

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.snapshot: LiveSnapshot | None = None
        self.updates = 0  # updates applied (merged ones count once)
        self.polls = 0  # looks at the run's files
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(("advisor", "bold"), " · live · opening the run…"),
            id="title",
            classes="title",
        )
        yield Static(id="stats", classes="status")
        yield Static(id="memory", classes="status")
        yield Static(id="message", classes="message")
        with Vertical(id="charts"):
            yield LineChart(
                "Throughput", "seconds since start", "samples/s", id="throughput", ylim=(0, None)
            )
            yield LineChart(
                "Utilization", "seconds since start", "%", id="utilization", ylim=(0, 100)
            )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#message", Static).display = False
        self.query_one("#memory", Static).display = False
        self.query_one(
            "#throughput", LineChart
        ).empty_note = "waiting for the first measured window"
        self.query_one(
            "#utilization", LineChart
        ).empty_note = "no GPU or host samples (telemetry off?)"
        self.set_interval(1.0, self._tick)
        self._follow()

    def on_unmount(self) -> None:
        self._stop.set()

    @work(thread=True, exclusive=True, group="live", exit_on_error=False)
    def _follow(self) -> None:
        worker = get_current_worker()
        try:
            live = self.data.live(self.path)
            while not (self._stop.is_set() or worker.is_cancelled):
                snapshot, changed = live.poll()
                self.polls += 1
                if changed:
                    self.post_message(LiveUpdate(snapshot))
                if snapshot.final:
                    return
                self._stop.wait(self.advisor.poll_s)
        except AdvisorError as exc:
            self.post_message(LoadFailed(str(exc), "the live run"))
        except Exception as exc:  # noqa: BLE001 - a line in the UI, never a traceback
            self.post_message(
                LoadFailed(f"internal error: {type(exc).__name__}: {exc}", "the live run")
            )

    @on(LiveUpdate)
    def _update(self, message: LiveUpdate) -> None:
        snap = self.snapshot = message.snapshot
        self.updates += 1
        badge = ("● LIVE", "bold green") if not snap.final else (snap.status.upper(), "bold")
        self.query_one("#title", Static).update(
            Text.assemble(("advisor", "bold"), " · live · run ", (snap.run_id, "bold"), "  ", badge)
        )
        self.query_one("#throughput", LineChart).show({"samples/s": snap.throughput})
        util = {f"GPU {i}": points for i, points in snap.gpu_util.items()}
        if snap.cpu_util:
            util["CPU (mean of cores)"] = snap.cpu_util
        self.query_one("#utilization", LineChart).show(util)
        memory = live_memory_text(snap.memory_mb, snap.memory_warning)
        box = self.query_one("#memory", Static)
        box.display = memory is not None
        box.update(memory or "")
        self._tick()
        if snap.final:
            self.notify(f"run {snap.run_id} {snap.status}: enter shows its findings", timeout=6)

    def _tick(self) -> None:
        if self.snapshot is not None:
            line = stats_line(self.snapshot)
            if self.snapshot.final:
                line = f"{self.snapshot.status} · {line}"
            self.query_one("#stats", Static).update(line)

    @on(LoadFailed)
    def _failed(self, message: LoadFailed) -> None:
        box = self.query_one("#message", Static)
        box.display = True
        box.update(Text.assemble(("Live view stopped\n\n", "bold red"), message.error))

    def action_findings(self) -> None:
        self.post_message(Navigate("findings", path=self.path))

    def text_plots(self) -> dict[str, str]:
        return {
            "throughput": self.query_one("#throughput", LineChart).as_text(),
            "utilization": self.query_one("#utilization", LineChart).as_text(),
        }

    def plots(self) -> None:
        name = self.snapshot.run_id if self.snapshot else "live"
        text = self.text_plots()
        self.export_result(lambda: self.data.export_plots(f"{name}-live", text))

    def export(self) -> None:
        path = self.path
        self.export_result(lambda: self.data.export_report(self.data.report(path, fresh=True)))
