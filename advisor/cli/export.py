"""``advisor export RUN -o FILE``: the full diagnosis report as versioned JSON."""

from __future__ import annotations

from pathlib import Path

import click

from advisor.cli.common import store_of


@click.command("export")
@click.argument("run", required=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default="-",
    show_default=True,
    help="File to write ('-' for stdout).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A pyproject.toml to read instead of the nearest one.",
)
@click.option(
    "--rules-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Rule files to read instead of the built-in rules.",
)
@click.pass_context
def command(
    ctx: click.Context, run: str | None, output: str, config_file: str | None, rules_dir: str | None
) -> None:
    """Write the JSON report of RUN (default: latest); it validates against `advisor schema`."""
    from advisor.diagnosis.config import load_config
    from advisor.render import render

    report = store_of(ctx).diagnose(run or "latest", load_config(config_file), rules_dir=rules_dir)
    text = render(report, "json")
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(
            f"{output}: report of run {report.run.run_id} ({len(report.failures)} findings)",
            err=True,
        )
