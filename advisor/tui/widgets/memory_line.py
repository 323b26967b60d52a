"""The run's memory in one line: a sparkline of the process's peak per epoch, the peak, and its
growth (or, for a leak, the epoch at which memory runs out), from the ``memory.*`` facts; and the
live view's line, from the epochs recorded so far and the memory collector's in-fit warning.

Hidden for runs without a per-epoch memory series (runs written before the memory collector, or
with ``memory=False``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from advisor.diagnosis.report import Facts, fact_value

BARS = "▁▂▃▄▅▆▇█"
MAX_POINTS = 60  # the last epochs, when there are more


def sparkline(values: Sequence[float]) -> str:
    """One bar per value, scaled from the series' lowest to its highest (a flat series: lowest)."""
    values = list(values)[-MAX_POINTS:]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(
        BARS[0] if span <= 0 else BARS[min(len(BARS) - 1, int((v - low) / span * len(BARS)))]
        for v in values
    )


def memory_text(facts: Facts) -> Text | None:
    peaks = fact_value(facts, "memory.host.epoch_peaks_mb")
    if not peaks:
        return None
    growing = fact_value(facts, "memory.growing") is True
    text = Text.assemble(
        ("memory ", "bold"),
        (sparkline(peaks), "red" if growing else "green"),
        f"  peak {max(peaks):,.0f} MB",
    )
    rate = fact_value(facts, "memory.growth_mb_per_epoch")
    if rate is not None:
        text.append(f" · {'grows' if growing else 'steady'} {rate:,.1f} MB/epoch")
    at = fact_value(facts, "memory.exhaustion_epoch")
    if growing and at is not None:
        text.append(f", runs out at epoch ~{at:,.0f}", style="red")
    return text


def live_memory_text(peaks_mb: Sequence[float], warning: str | None = None) -> Text | None:
    """``memory ▁▂▄█  peak 1,163 MB in 4 epochs · last epoch +54 MB``, and the leak warning the
    memory collector gave during the fit (red) under it; None before the first epoch's record."""
    if not peaks_mb:
        return None
    epochs = f"{len(peaks_mb)} epoch{'s' if len(peaks_mb) > 1 else ''}"
    text = Text.assemble(
        ("memory ", "bold"),
        (sparkline(peaks_mb), "red" if warning else "green"),
        f"  peak {max(peaks_mb):,.0f} MB in {epochs}",
    )
    if len(peaks_mb) > 1:
        text.append(f" · last epoch {peaks_mb[-1] - peaks_mb[-2]:+,.0f} MB")
    if warning:
        text.append(f"\n{warning}", style="red")
    return text


class MemoryLine(Static):
    """The memory sparkline of a run (hidden without one)."""

    def show(self, facts: Facts) -> None:
        text = memory_text(facts)
        self.display = text is not None
        self.update(text or "")
