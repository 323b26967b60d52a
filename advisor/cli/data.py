"""``advisor data PATH [--into RUN]``: what a data set is made of — object count, sizes,
compression and formats — for a local folder or ``s3://bucket/prefix``, with the storage rules
(S301, S305) it decides. ``--into RUN`` attaches the facts to a run for ``advisor check``."""

from __future__ import annotations

import json
import sys

import click

from advisor.cli.common import store_of


@click.command("data")
@click.argument("path")
@click.option(
    "--into",
    "into",
    metavar="RUN",
    default=None,
    help="Attach the data facts to this run (id, prefix, path, s3:// URL or 'latest').",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Size at most this many objects (default 1,000,000).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1, max=1000),
    default=None,
    help="Objects whose first bytes are read to recognise compression and format (default 16).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@click.pass_context
def command(
    ctx: click.Context,
    path: str,
    into: str | None,
    fmt: str,
    limit: int | None,
    sample: int | None,
    quiet: bool,
) -> None:
    """Size the data at PATH (a folder, a file or s3://bucket/prefix)."""
    from advisor.render.data import render_data, size
    from advisor.service.cloud import attach_data, check_data, data_findings

    tty = sys.stderr.isatty()
    lead = "\r" if tty else ""

    def progress(objects: int, total: int) -> None:
        if not quiet:
            click.echo(f"{lead}listed {objects:,} objects, {size(total)}", err=True, nl=not tty)

    summary = check_data(path, limit=limit, sample=sample, progress=progress)
    if tty and not quiet:
        click.echo("", err=True)
    findings = data_findings(summary)
    if fmt == "json":
        payload = {
            "summary": summary.to_dict(),
            "facts": summary.facts(),
            "findings": [f.model_dump(mode="json", exclude_none=True) for f in findings],
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(render_data(summary.to_dict(), findings), nl=False)
    if into is not None:
        run_path = attach_data(store_of(ctx), summary, into)
        click.echo(f"attached to run {run_path.name}", err=True)
