"""The run view's memory line: a sparkline of the per-epoch peaks, the growth, and a leak's
deadline; nothing for a run without a memory series."""

from __future__ import annotations

from advisor.diagnosis.report import FactValue
from advisor.tui.widgets.memory_line import memory_text, sparkline


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
