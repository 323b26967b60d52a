"""``advisor runs``: list the runs in the store (each read once; unreadable runs listed as such)."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from advisor.cli.common import store_of


@click.command("runs")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True
)
@click.option("--limit", type=int, default=50, show_default=True, help="Newest N runs (0: all).")
@click.option(
    "--facts",
    "facts",
    default=None,
    metavar="NAMES",
    help="csv/json: fact columns, comma-separated names or globs ('trace.*'), or 'all' "
    "(default for csv: throughput, cost, epoch time, utilization, energy, input, communication).",
)
@click.pass_context
def command(ctx: click.Context, fmt: str, limit: int, facts: str | None) -> None:
    """List runs: id, date, status, strategy, workers, samples/s, samples/$."""
    store = store_of(ctx)
    if fmt == "csv":
        _csv(store, facts, limit)
        return
    rows = store.runs(limit if limit > 0 else None)
    if fmt == "json":
        payload = [r.to_dict() for r in rows]
        if facts:  # the chosen facts of every readable run, by fact name
            from advisor.notebook import fact_names

            names = fact_names(facts)
            for item in payload:
                if item["status"] != "unreadable":
                    analysed = store.analyse(item["path"]).facts
                    item["facts"] = {n: analysed.get(n) for n in names}
        click.echo(json.dumps(payload, indent=2, default=str))
        return
    from rich import box
    from rich.table import Table

    from advisor.cli.common import console as make_console
    from advisor.numbers import count_text, readable

    console = make_console()
    if not rows:
        console.print(f"no runs in {store.root}")
        return
    table = Table(
        title=f"runs in {store.root}", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1)
    )
    for col, justify in (
        ("run", "left"),
        ("date", "left"),
        ("status", "left"),
        ("strategy", "left"),
        ("workers", "right"),
        ("samples/s", "right"),
        ("samples/$", "right"),
    ):
        table.add_column(col, justify=justify, no_wrap=col in ("run", "samples/s", "samples/$"))  # type: ignore[arg-type]
    for r in rows:
        table.add_row(
            r.run_id,
            _date(r.created),
            r.status_text,
            r.strategy or "—",
            readable(r.workers),
            readable(r.samples_per_s, compact=True),
            count_text(r.samples_per_dollar),
        )
    console.print(table)
    for r in rows:
        if r.error:
            console.print(f"{r.run_id}: {r.error}", markup=False, highlight=False)


def _date(created: Any) -> str:
    try:
        return time.strftime("%m-%d %H:%M", time.localtime(created)) if created else "—"
    except (OverflowError, OSError, ValueError, TypeError):
        return "—"


def _csv(store: object, facts: str | None, limit: int) -> None:
    """One line per run; columns as ``advisor.runs_frame`` (manifest, ``tags.*``, fact names)."""
    import csv
    import sys

    from advisor.notebook import fact_names, run_columns, run_rows

    names = fact_names(facts)
    rows = run_rows(store, names, limit if limit > 0 else None)  # type: ignore[arg-type]
    writer = csv.DictWriter(
        sys.stdout, fieldnames=run_columns(rows, names), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})


def _cell(value: object) -> object:
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return value
