"""Terminal line charts (textual-plotext): one widget, several named series, kept for export.

A chart remembers what it draws (``series``) so tests can see it change and ``p`` can save the
same picture as text (:meth:`LineChart.as_text`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual_plotext import PlotextPlot

Points = Sequence[tuple[float, float]]


class LineChart(PlotextPlot):
    """A titled line chart of named series; ``dashed`` names series drawn as a reference line."""

    def __init__(self, title: str, xlabel: str, ylabel: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.series: dict[str, list[tuple[float, float]]] = {}
        self.empty_note = "no data yet"
        self.draws = 0

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(self, series: Mapping[str, Points], *, empty_note: str | None = None,
             xticks: Sequence[float] | None = None) -> None:
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
