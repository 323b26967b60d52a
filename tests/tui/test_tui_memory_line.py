"""The run view's memory line: a sparkline of the per-epoch peaks, the growth, and a leak's
deadline; nothing for a run without a memory series. The live view's line: the epochs recorded so
far (as the live series folds the records in) and the memory collector's in-fit warning."""

from __future__ import annotations

from advisor.analysis.live import LiveSeries
from advisor.diagnosis.report import FactValue
from advisor.store.schema import EventRecord, MemoryRecord
from advisor.tui.widgets.memory_line import live_memory_text, memory_text, sparkline

MB = 1 << 20


def test_the_sparkline_spans_the_series():
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5, 5, 5]) == "▁▁▁" and sparkline([]) == ""
    assert len(sparkline(range(500))) == 60


def test_a_leak_shows_its_rate_and_deadline_and_a_flat_run_its_steadiness():
    leak = {
        "memory.host.epoch_peaks_mb": FactValue(value=[900.0, 954.0, 1008.0]),
        "memory.growing": FactValue(value=True),
        "memory.growth_mb_per_epoch": FactValue(value=54.0),
        "memory.exhaustion_epoch": FactValue(value=412.0),
    }
    text = memory_text(leak).plain
    assert "peak 1,008 MB" in text and "grows 54.0 MB/epoch" in text and "epoch ~412" in text
    flat = {
        "memory.host.epoch_peaks_mb": FactValue(value=[900.0, 900.0]),
        "memory.growing": FactValue(value=False),
        "memory.growth_mb_per_epoch": FactValue(value=0.0),
    }
    assert "steady 0.0 MB/epoch" in memory_text(flat).plain
    assert memory_text({}) is None


def test_the_live_series_keeps_each_epochs_peak_and_the_leak_warning():
    series = LiveSeries("leak", created=1000.0)
    readings = [  # (rss at the end, the epoch's high-water mark): the peak is the larger
        (900, 950),
        (954, None),
        (1008, 1020),
    ]
    series.add(
        [
            (0, MemoryRecord(t=1001.0 + i, epoch=i, rss=rss * MB, rss_peak=peak and peak * MB))
            for i, (rss, peak) in enumerate(readings)
        ]
    )
    series.add([(1, MemoryRecord(t=1004.0, epoch=3, rss=5000 * MB))])  # another rank's: not shown
    snap = series.snapshot("running")
    assert snap.memory_mb == (950.0, 954.0, 1020.0) and snap.memory_warning is None
    text = live_memory_text(snap.memory_mb, snap.memory_warning).plain
    assert text == "memory ▁▁█  peak 1,020 MB in 3 epochs · last epoch +66 MB"
    warning = "memory grows 54.0 ± 0.0 MB per epoch from epoch 1 on; at this rate it runs out"
    series.add([(0, EventRecord(t=1005.0, source="throughput", level="warning", message="x"))])
    assert series.snapshot("running").memory_warning is None  # another collector's warning
    series.add([(0, EventRecord(t=1006.0, source="memory", level="warning", message=warning))])
    snap = series.snapshot("running")
    assert snap.memory_warning == warning
    assert live_memory_text(snap.memory_mb, snap.memory_warning).plain.endswith("\n" + warning)
    assert live_memory_text(()) is None  # before the first epoch's record: the line is hidden
