"""``advisor runs``: list the runs in the store."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from advisor.cli.common import fmt_number, runs_dir_option


@click.command("runs")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--limit", type=int, default=50, show_default=True, help="Newest N runs (0: all).")
@click.pass_context
def command(ctx: click.Context, fmt: str, limit: int) -> None:
    """List runs: id, date, status, strategy, workers, samples/s, samples/$."""
    from advisor.analysis.registry import registry
    from advisor.cli.main import one_line
    from advisor.store.paths import resolve_runs_dir
    from advisor.store.reader import RunReader, list_run_dirs

    root = resolve_runs_dir(runs_dir_option(ctx))
    dirs = list_run_dirs(root)
    if limit > 0:
        dirs = dirs[-limit:]
    rows: list[dict[str, Any]] = []
    for path in dirs:
        try:
            run = RunReader(path).read()
        except Exception as exc:  # noqa: BLE001 — an unreadable run is listed; the others still are
            rows.append({"run_id": path.name, "status": "unreadable", "error": one_line(str(exc))})
            continue
        facts, _ = registry().derive(run)
        m = run.manifest
        rows.append({
            "run_id": m.run_id,
            "created": m.created,
            "status": run.status,
            "strategy": m.strategy or "default",
            "workers": m.num_workers,
            "samples_per_s": facts.get("throughput.samples_per_s"),
            "samples_per_dollar": facts.get("cost.samples_per_dollar"),
            "sweep_id": m.sweep_id,
        })
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    from rich import box
    from rich.table import Table

    from advisor.cli.common import console as make_console

    console = make_console()
    if not rows:
        console.print(f"no runs in {root}")
        return
    table = Table(title=f"runs in {root}", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1))
    for col, justify in (("run", "left"), ("date", "left"), ("status", "left"), ("strategy", "left"),
                         ("workers", "right"), ("samples/s", "right"), ("samples/$", "right")):
        table.add_column(col, justify=justify, no_wrap=col in ("run", "samples/s", "samples/$"))  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["run_id"], _date(r.get("created")), r["status"], r.get("strategy") or "—",
                      str(r.get("workers", "—")), fmt_number(r.get("samples_per_s")),
                      fmt_number(r.get("samples_per_dollar"), 2))
    console.print(table)
    for r in rows:
        if r.get("error"):
            console.print(f"{r['run_id']}: {r['error']}", markup=False, highlight=False)


def _date(created: Any) -> str:
    try:
        return time.strftime("%m-%d %H:%M", time.localtime(created)) if created else "—"
    except (OverflowError, OSError, ValueError, TypeError):
        return "—"
