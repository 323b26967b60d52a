"""Live mode: records appended to a running run during the test show up in the charts; queued
updates merge so a fast writer cannot flood the UI; a run that ends turns final (also on the
Runs screen); the memory line appears with the first epoch's memory record and shows the leak
warning the memory collector writes during the fit."""

from __future__ import annotations

import threading
import time

import pytest
from tui_helpers import drive, make, settle, until

from advisor.analysis.live import LiveSnapshot
from advisor.store.schema import EventRecord, HostSample, MemoryRecord, WindowRecord
from advisor.store.writer import RunWriter
from advisor.tui.messages import LiveUpdate
from advisor.tui.screens.live import LiveScreen
from advisor.tui.screens.runs import RunsScreen

pytestmark = pytest.mark.slow  # drives the real Textual app (seconds per test)


def window(writer: RunWriter, i: int, samples_per_s: float) -> None:
    t = writer.manifest.created + i  # type: ignore[union-attr]
    writer.write(
        WindowRecord(
            t=t,
            epoch=0,
            seconds=1.0,
            steps=10,
            samples=int(samples_per_s),
            step_begin=10 * i,
            step_end=10 * (i + 1),
        )
    )


def test_appended_records_change_the_chart_and_the_end_turns_it_final(runs_dir):
    writer = RunWriter(runs_dir, "growing", manifest={"created": 1_800_000_000.0})
    window(writer, 1, 500.0)

    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, LiveScreen), "a running run opens live"
        chart = screen.query_one("#throughput")
        await until(pilot, lambda: chart.series.get("samples/s") == [(1.0, 500.0)])
        assert "LIVE" in str(screen.query_one("#title").content)
        window(writer, 2, 800.0)
        writer.write(HostSample(t=1_800_000_002.5, cpu_percent=[30.0, 50.0]))
        await until(pilot, lambda: len(chart.series.get("samples/s", [])) == 2)
        assert chart.series["samples/s"][-1] == (2.0, 800.0)
        assert screen.query_one("#utilization").series["CPU (mean of cores)"] == [(2.5, 40.0)]
        assert "latest 800.0 samples/s" in str(screen.query_one("#stats").content)
        writer.close("finished")
        await until(pilot, lambda: screen.snapshot is not None and screen.snapshot.final)
        assert "FINISHED" in str(screen.query_one("#title").content)
        await settle(pilot)
        assert not [w for w in pilot.app.workers if w.group == "live" and not w.is_finished], (
            "polling stopped"
        )

    drive(make("growing", runs_dir=runs_dir, poll_s=0.05), scenario)


def test_the_memory_line_follows_the_epochs_and_shows_the_leak_warning(runs_dir):
    writer = RunWriter(runs_dir, "leaking", manifest={"created": 1_800_000_000.0})
    window(writer, 1, 500.0)

    def epoch(i: int) -> None:
        rss = (900 + 54 * i) << 20
        writer.write(MemoryRecord(t=1_800_000_001.0 + i, epoch=i, rss=rss, rss_peak=rss))

    async def scenario(pilot):
        screen = pilot.app.screen
        memory = screen.query_one("#memory")
        await until(pilot, lambda: screen.snapshot is not None)
        assert not memory.display, "no memory record yet: no line"
        for i in range(3):
            epoch(i)
        await until(pilot, lambda: memory.display and "3 epochs" in str(memory.content))
        assert "peak 1,008 MB in 3 epochs · last epoch +54 MB" in str(memory.content)
        warning = "memory grows 54.0 ± 0.0 MB per epoch from epoch 1 on"
        writer.write(
            EventRecord(t=1_800_000_005.0, source="memory", level="warning", message=warning)
        )
        await until(pilot, lambda: warning in str(memory.content))
        writer.close("finished")

    drive(make("leaking", runs_dir=runs_dir, poll_s=0.05), scenario)


def test_queued_updates_merge_into_the_newest(runs_dir):
    writer = RunWriter(runs_dir, "flood", manifest={"created": 1_800_000_000.0})

    async def scenario(pilot):
        screen = pilot.app.screen
        await until(pilot, lambda: screen.snapshot is not None)
        before = screen.updates
        for i in range(1, 51):  # 50 updates queued at once, as a fast writer could cause
            points = tuple((float(k), 100.0 * k) for k in range(1, i + 1))
            screen.post_message(LiveUpdate(LiveSnapshot("flood", "running", i, 0, 0, points)))
        await pilot.pause(0.2)
        applied = screen.updates - before
        assert 1 <= applied <= 3, applied
        assert screen.snapshot.records == 50
        assert len(screen.query_one("#throughput").series["samples/s"]) == 50

    drive(make("flood", runs_dir=runs_dir, poll_s=5.0), scenario)
    writer.close()


def test_a_writer_at_10_records_per_second_is_followed_without_loss(runs_dir):
    writer = RunWriter(runs_dir, "steady", manifest={"created": 1_800_000_000.0})
    written = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set() and i < 25:  # 2.5 s at 10 records/s
            i += 1
            window(writer, i, 100.0 + i) if i % 5 == 0 else writer.write(
                HostSample(t=1_800_000_000.0 + i, cpu_percent=[float(i)])
            )
            written.append(i)
            time.sleep(0.1)

    async def scenario(pilot):
        screen = pilot.app.screen
        thread = threading.Thread(target=write)
        thread.start()
        while thread.is_alive():
            await pilot.pause(0.1)
        await until(
            pilot,
            lambda: screen.snapshot is not None and screen.snapshot.records == 1 + len(written),
        )
        assert [y for _, y in screen.snapshot.throughput] == [105.0, 110.0, 115.0, 120.0, 125.0]
        assert screen.updates <= screen.polls, (
            "at most one redraw per look at the files, however many records"
        )

    try:
        drive(make("steady", runs_dir=runs_dir, poll_s=0.2), scenario)
    finally:
        stop.set()
        writer.close()


def test_runs_screen_marks_a_running_run_and_sees_it_finish(runs_dir, monkeypatch):
    import advisor.tui.screens.runs as runs_module

    monkeypatch.setattr(runs_module, "REFRESH_S", 0.2)
    writer = RunWriter(runs_dir, "running-one", manifest={"created": 1_800_000_000.0})
    window(writer, 1, 300.0)

    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs")
        key = str(runs_dir / "running-one")

        def status() -> str:
            return str(table.get_cell(key, "status"))

        assert status() == "● running"
        writer.close("finished")
        await until(pilot, lambda: status() == "finished")

    drive(make(runs_dir=runs_dir), scenario)
