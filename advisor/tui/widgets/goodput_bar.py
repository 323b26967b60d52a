"""The run's time budget as one stacked bar: where the fit's wall clock went, and its goodput.

The view reads the facts the budget area derived (``time.table``, ``goodput``) and derives
nothing more: one segment per category in the table's order, a part of another category
(``input_wait`` lies inside the training steps) drawn inside it rather than beside it, and a
legend largest first with the categories under 1% grouped as "other". The bar is a rich
renderable that fills the width it is given, so the same picture serves the screen and the tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from advisor.diagnosis.report import Facts, fact_value
from advisor.numbers import percent

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions

NO_GOODPUT = "no time budget: train with advisor.AdvisorCallback (goodput=True, the default)"
OTHER_BELOW = 0.01  # a share under this is one of the "other" categories in the legend
OTHER_STYLE = "grey50"
BAR_CELL = "█"
TITLE = "time budget "
MAX_BAR_WIDTH = 100

# Short names for the legend (the fact table's labels are sentences); a category not listed here
# is shown by its table label.
SHORT_LABELS = {
    "startup": "start-up",
    "compile": "compiling",
    "train_steps": "training steps",
    "input_wait": "waiting for input",
    "callbacks": "callbacks",
    "validation": "validation",
    "checkpoint": "checkpoints",
    "epoch_boundary": "epoch boundaries",
    "advisor_hooks": "advisor hooks",
    "advisor_measure": "advisor measurements",
    "profile": "advisor profile",
    "unaccounted": "unaccounted",
}
STYLES = {
    "train_steps": "green",
    "startup": "blue",
    "compile": "bright_cyan",
    "callbacks": "yellow",
    "validation": "cyan",
    "checkpoint": "magenta",
    "epoch_boundary": "bright_blue",
    "advisor_hooks": "red",
    "advisor_measure": "bright_red",
    "profile": "bright_magenta",
    "unaccounted": "white",
}


@dataclass(frozen=True)
class Segment:
    """One category of the bar: its share of the wall clock and how it is drawn."""

    category: str
    label: str
    share: float

    @property
    def style(self) -> str:
        return STYLES.get(self.category, "white") if self.share >= OTHER_BELOW else OTHER_STYLE


@dataclass(frozen=True)
class BudgetView:
    """What the bar shows: segments in the table's order, goodput, and the parts inside them."""

    segments: tuple[Segment, ...]
    goodput: float | None
    without_advisor: float | None = None
    input_wait: float | None = None
    compiled: tuple[str, ...] = ()  # the compile events, one line per function (most retraced)

    def legend(self) -> Text:
        """``training steps 46% · callbacks 45% · … · other 2%``, largest first, each name in its
        colour."""
        shown = sorted((s for s in self.segments if s.share >= OTHER_BELOW), key=lambda s: -s.share)
        other = sum(s.share for s in self.segments if s.share < OTHER_BELOW)
        text = Text()
        for segment in shown:
            if text:
                text.append(" · ")
            text.append(segment.label, style=segment.style)
            text.append(f" {_share(segment.share)}")
        if other > 0:
            text.append(" · " if text else "")
            text.append("other", style=OTHER_STYLE)
            text.append(f" {_share(other)}")
        return text

    def goodput_line(self) -> Text:
        """``goodput 46% of the wall clock in training steps (20% of the wall clock waiting for
        input)``, then the goodput had the advisor not been there."""
        text = Text.assemble(
            ("goodput ", "bold"), (percent(self.goodput, 0, fraction=True), "bold green")
        )
        text.append(" of the wall clock in training steps", style="dim")
        if self.input_wait is not None and self.input_wait >= OTHER_BELOW:
            # A share of the wall clock, as goodput is (not of the goodput): as `show`'s table gives
            # it.
            text.append(
                f" ({percent(self.input_wait, 0, fraction=True)} of the wall clock waiting for "
                "input)",
                style="dim",
            )
        if self.without_advisor is not None:
            text.append(
                f" · {percent(self.without_advisor, 0, fraction=True)} without the advisor's own "
                "time",
                style="dim",
            )
        return text

    def widths(self, width: int) -> list[int]:
        """Cells per segment, proportional to its share, that add up to ``width`` (largest
        remainder)."""
        total = sum(s.share for s in self.segments)
        if total <= 0 or width <= 0:
            return [0] * len(self.segments)
        exact = [s.share / total * width for s in self.segments]
        cells = [int(x) for x in exact]
        by_remainder = sorted(range(len(exact)), key=lambda i: cells[i] - exact[i])
        for i in by_remainder[: width - sum(cells)]:
            cells[i] += 1
        return cells

    def bar(self, width: int) -> Text:
        text = Text()
        for segment, cells in zip(self.segments, self.widths(width)):
            text.append(BAR_CELL * cells, style=segment.style)
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width = max(1, min(MAX_BAR_WIDTH, options.max_width - len(TITLE)))
        yield Text.assemble((TITLE, "bold"), self.bar(width), no_wrap=True, overflow="crop")
        yield self.legend()
        yield self.goodput_line()
        for line in self.compiled:
            yield Text(line, style="dim")


def goodput_view(facts: Facts) -> BudgetView | None:
    """The bar of a run's facts (a report's); None without a budget."""
    table = fact_value(facts, "time.table")
    if not isinstance(table, list) or not table:
        return None
    segments = []
    for row in table:
        if not isinstance(row, Mapping) or row.get("part_of"):
            continue  # a part of another category is inside that category's segment
        share = row.get("share")
        if isinstance(share, (int, float)) and share > 0:
            category = str(row.get("category", ""))
            segments.append(
                Segment(
                    category,
                    SHORT_LABELS.get(category, str(row.get("label", category))),
                    float(share),
                )
            )
    if not segments:
        return None
    return BudgetView(
        tuple(segments),
        _number(facts, "goodput"),
        _number(facts, "goodput.without_advisor"),
        _number(facts, "time.input_wait.share"),
        compiled_lines(facts),
    )


COMPILED_ROWS = 3  # functions listed under the bar


def compiled_lines(facts: Facts) -> tuple[str, ...]:
    """``compiled train_step 80× in 5.30 s, 79 again (a new Python value ×79)``, for the functions
    traced again (or, without retraces, the costliest one)."""
    rows = fact_value(facts, "compile.functions")
    if not isinstance(rows, list) or not rows:
        return ()
    again = [r for r in rows if isinstance(r, Mapping) and r.get("retraces")]
    out = []
    for r in (again or rows[:1])[:COMPILED_ROWS]:
        causes = f", {r['retraces']} again ({r['causes']})" if r.get("retraces") else ""
        out.append(f"compiled {r['function']} {r['count']}× in {float(r['seconds']):.2f} s{causes}")
    return tuple(out)


def _share(value: float) -> str:
    """A share in whole percent; one under 1% with a decimal, so that it does not read as
    nothing."""
    return percent(value, 0 if value >= OTHER_BELOW else 1, fraction=True)


def _number(facts: Facts, name: str) -> float | None:
    value = fact_value(facts, name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class GoodputBar(Static):
    """The budget of the run on screen, or one line saying how to get one."""

    budget: BudgetView | None = None

    def show(self, facts: Facts) -> None:
        self.budget = goodput_view(facts)
        self.update(self.budget if self.budget is not None else Text(NO_GOODPUT, style="dim"))
