"""Where the time went: the fit's time budget as a table with bars, its costliest callbacks and
the functions it traced or compiled.

Reads the budget facts only (``time.table``, ``goodput``, ``callbacks.table``, ``checkpoint.*``;
advisor/analysis/facts/goodput.py) and the compile events' ``compile.functions``, so ``advisor
show``, the demo and any other view print the same rows from the same numbers.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from advisor.numbers import percent, readable

BAR_WIDTH = 24
CALLBACK_ROWS = 5  # the costliest callback hooks listed under the table
FUNCTION_ROWS = 5  # the compiled functions listed under the table
MIN_CALLBACK_SHARE = 0.001  # hooks under a thousandth of the wall clock are left out


def bar(share: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``share`` (0..1) in eighths of a character."""
    eighths = max(0, min(width * 8, round(share * width * 8)))
    full, rest = divmod(eighths, 8)
    return "█" * full + ("" if rest == 0 else " ▏▎▍▌▋▊▉"[rest])


def budget_heading(facts: dict[str, Any]) -> str | None:
    goodput, wall = facts.get("goodput"), facts.get("time.wall_seconds")
    if goodput is None or wall is None:
        return None
    final = (
        ""
        if facts.get("time.final", True)
        else " (up to the last epoch end: the job did not end normally)"
    )
    return (
        f"Where the time went: {readable(wall, 1)} s of fit{final}, goodput "
        f"{percent(goodput, 0, fraction=True)}"
        f" (training steps ÷ wall clock)"
    )


def budget_table(facts: dict[str, Any]) -> Table | None:
    """One row per category of the budget: seconds, share and a bar; None without a budget."""
    rows = facts.get("time.table")
    if not isinstance(rows, list) or not rows:
        return None
    table = Table(show_edge=False, box=None, padding=(0, 2))
    table.add_column("where")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    for row in rows:
        share = float(row.get("share") or 0.0)
        if row.get("category") != "train_steps" and row.get("seconds", 0.0) < 0.0005:
            continue  # nothing spent there
        label = str(row.get("label", row.get("category")))
        inside = row.get("part_of") is not None
        style = "dim" if inside else ("green" if row.get("category") == "train_steps" else "")
        table.add_row(
            Text(("  " if inside else "") + label, style=style),
            f"{float(row.get('seconds', 0.0)):.2f}",
            percent(share, 1, fraction=True),
            Text(bar(share), style=style or "yellow"),
        )
    return table


def callbacks_lines(facts: dict[str, Any]) -> list[str]:
    """The costliest callback hooks and the checkpoint saves, one line each."""
    lines = []
    rows = facts.get("callbacks.table")
    if isinstance(rows, list):
        shown = [r for r in rows if float(r.get("share") or 0.0) >= MIN_CALLBACK_SHARE][
            :CALLBACK_ROWS
        ]
        for r in shown:
            per_step = r.get("ms_per_step")
            cost = f"{per_step:.2f} ms per step, " if isinstance(per_step, (int, float)) else ""
            lines.append(
                f"  {r['name']}.{r['hook']}: {float(r['seconds']):.2f} s ({cost}"
                f"{percent(r.get('share'), 1, fraction=True)} of the fit) in {r['calls']:,} calls"
                + (" · checkpoint" if r.get("kind") == "checkpoint" else "")
            )
    count = facts.get("checkpoint.count")
    if count:
        written = facts.get("checkpoint.bytes")
        size = (
            f", {readable(written / 1e6, 1)} MB written"
            if isinstance(written, (int, float))
            else ""
        )
        lines.append(
            f"  checkpoints: {count} saves in {float(facts.get('checkpoint.seconds', 0.0)):.2f} "
            f"s{size}" + (f" ({facts['checkpoint.by']})" if facts.get("checkpoint.by") else "")
        )
    return lines


def compile_lines(facts: dict[str, Any]) -> list[str]:
    """The traced or compiled functions, most retraces first: count, seconds and causes; then
    torch.compile's graph breaks with their reasons."""
    rows = facts.get("compile.functions")
    if not isinstance(rows, list):
        return []
    lines = []
    for r in rows[:FUNCTION_ROWS]:
        retraces = int(r.get("retraces") or 0)
        again = f", {retraces} again ({r['causes']})" if retraces and r.get("causes") else ""
        detail = f": {r['detail']}" if retraces and r.get("detail") else ""
        lines.append(
            f"  {r['function']}: {r['count']:,} × in {float(r['seconds']):.2f} s{again}{detail}"
        )
    if len(rows) > FUNCTION_ROWS:
        lines.append(f"  … and {len(rows) - FUNCTION_ROWS} more functions")
    breaks = facts.get("compile.graph_breaks")
    if isinstance(breaks, int) and breaks > 0:  # torch.compile: each break splits the graph
        reasons = facts.get("compile.graph_break_reasons")
        lines.append(f"  graph breaks: {breaks:,}" + (f" ({reasons})" if reasons else ""))
    return lines


def goodput_parts(facts: dict[str, Any]) -> list[Any]:
    """What ``advisor show`` prints first: the heading, the table, the callback lines and the
    compiled functions."""
    heading, table = budget_heading(facts), budget_table(facts)
    if heading is None or table is None:
        return []
    parts: list[Any] = [Text(heading, style="bold"), table]
    lines = callbacks_lines(facts)
    if lines:
        parts.append(Text("Costliest hooks and saves", style="bold"))
        parts += [Text(line) for line in lines]
    compiled = compile_lines(facts)
    if compiled:
        parts.append(Text("Traced and compiled functions", style="bold"))
        parts += [Text(line) for line in compiled]
    return parts
