"""``advisor report``: the scaling report of a sweep (or of every run in a store), with plots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from advisor.cli.common import runs_dir_option

if TYPE_CHECKING:
    from advisor.analysis.scaling import ScalingTable


@click.command("report")
@click.argument("source", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv", "md"]),
    default="text",
    show_default=True,
)
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the plots (PNG) into this directory.",
)
@click.option("--svg", is_flag=True, help="Write SVG plots as well as PNG.")
@click.option(
    "--price-per-hour",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="USD per instance-hour, instead of what the runs recorded.",
)
@click.option(
    "--gpus-per-instance",
    type=click.IntRange(min=1),
    default=None,
    help="Accelerators per instance: N workers then occupy ⌈N ÷ this⌉ instances.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the report to this file instead of stdout.",
)
@click.pass_context
def command(
    ctx: click.Context,
    source: str | None,
    fmt: str,
    plots_dir: str | None,
    svg: bool,
    price_per_hour: float | None,
    gpus_per_instance: int | None,
    output: str | None,
) -> None:
    """Scaling report of SOURCE: a sweep id (or prefix), a sweep directory, a runs directory
    (every run in it), or a report saved with --format json. Default: the latest sweep.

    \b
    advisor report                       # latest sweep
    advisor report sweep-20261129 --plots plots/ --format md -o scaling.md
    """
    from advisor.render.scaling import render_table

    overrides = {"price_per_hour": price_per_hour, "gpus_per_instance": gpus_per_instance}
    table = load_table(source, runs_dir_option(ctx), overrides)
    text = render_table(table, fmt)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    if plots_dir:
        from advisor.render.plots import write_plots

        formats = ("png", "svg") if svg else ("png",)
        written, skipped = write_plots(table, Path(plots_dir), formats)
        for path in written:
            click.echo(f"wrote {path}", err=True)
        for note in skipped:
            click.echo(f"skipped: {note}", err=True)


def load_table(
    source: str | None, runs_dir: str | None, overrides: Mapping[str, Any]
) -> ScalingTable:
    """The table for a sweep id / sweep directory / runs directory / saved JSON / the latest
    sweep."""
    from advisor.service import RunService
    from advisor.service.scaling import saved_table

    if source and Path(source).is_file() and source.endswith(".json"):
        return saved_table(Path(source))
    return RunService(runs_dir).scaling_table(source, **overrides)
