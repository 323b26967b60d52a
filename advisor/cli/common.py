"""Helpers shared by subcommands: the runs dir from the context, number formatting."""

from __future__ import annotations

import math
from typing import Any

import click


def runs_dir_option(ctx: click.Context) -> str | None:
    obj = ctx.find_root().obj or {}
    return obj.get("runs_dir")


def fmt_number(value: Any, digits: int = 1) -> str:
    """Readable numbers: 1,234.5 / 12.3M / — for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    v = float(value)
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if abs(v) >= limit:
            return f"{v / limit:,.{digits}f}{suffix}"
    if v == int(v) and abs(v) < 1e6 and isinstance(value, int):
        return f"{int(v):,}"
    return f"{v:,.{digits}f}"


def console(stderr: bool = False) -> "Console":  # noqa: F821
    """A rich console; when piped, wide enough that tables do not wrap ids."""
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 120)
