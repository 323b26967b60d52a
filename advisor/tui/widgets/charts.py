"""Terminal line charts (textual-plotext): one widget, several named series, kept for export.

A chart remembers what it draws (``series``) so tests can see it change and ``p`` can save the
same picture as text (:meth:`LineChart.as_text`). The y-axis spans what the chart is of
(``ylim``: 0–100 for a percentage) and the data with a margin, never plotext's ±50% band around a
flat series (a steady 100% utilisation once read as 50–150%).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual_plotext import PlotextPlot

Points = Sequence[tuple[float, float]]
MARGIN = 0.1  # of the axis's span (of the level of a flat series) above and below the data


def y_range(
    values: Sequence[float], lower: float | None = None, upper: float | None = None
) -> tuple[float, float]:
    """The y-axis limits for ``values``: the data plus a margin, held at ``lower``/``upper``
    where given (a bound the quantity cannot pass, such as 0 and 100 for a percentage; the axis
    reaches it)."""
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = (high if upper is None else upper) - (low if lower is None else lower)
    pad = MARGIN * (span or abs(high) or 1.0)
    return (low - pad if lower is None else lower), (high + pad if upper is None else upper)


class LineChart(PlotextPlot):
    """A titled line chart of named series; ``dashed`` names series drawn as a reference line."""

    def __init__(
        self,
        title: str,
        xlabel: str,
        ylabel: str,
        *,
        id: str | None = None,
        ylim: tuple[float | None, float | None] = (None, None),
    ) -> None:
        super().__init__(id=id)
        self.ylim = ylim
        self.y_limits: tuple[float, float] | None = (
            None  # the axis drawn last (None: nothing drawn)
        )
        self.title = title
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.series: dict[str, list[tuple[float, float]]] = {}
        self.empty_note = "no data yet"
        self.draws = 0

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(
        self,
        series: Mapping[str, Points],
        *,
        empty_note: str | None = None,
        xticks: Sequence[float] | None = None,
    ) -> None:
        """Replace the data and redraw."""
        self.series = {name: list(points) for name, points in series.items() if points}
        if empty_note is not None:
            self.empty_note = empty_note
        self._xticks = list(xticks) if xticks else None
        self._draw()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title if self.series else f"{self.title}: {self.empty_note}")
        plt.xlabel(self.xlabel)
        plt.ylabel(self.ylabel)
        for name, points in self.series.items():
            xs = [x for x, _ in points]
            ys = [y for _, y in points]
            marker = "dot" if name == "ideal" else "braille"
            plt.plot(xs, ys, label=name, marker=marker)
        self.y_limits = None
        if self.series:
            self.y_limits = y_range(
                [y for points in self.series.values() for _, y in points], *self.ylim
            )
            plt.ylim(*self.y_limits)
        ticks = getattr(self, "_xticks", None)
        if ticks:
            plt.xticks(ticks, [f"{t:g}" for t in ticks])
        self.draws += 1
        self.refresh()

    def as_text(self, width: int = 100, height: int = 25) -> str:
        """The chart as plain text (no colours), at ``width`` × ``height`` characters."""
        self.plt.plotsize(width, height)
        text = Text.from_ansi(self.plt.build()).plain
        self.refresh()
        return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
