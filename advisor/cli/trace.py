"""``advisor trace PATH``: summarise a profile; ``--into RUN`` attaches it to a run.

PATH is a ``.xplane.pb`` file, a profile session folder, a TensorBoard log directory (the newest
session under it is read) or an advisor run (its own captures are summarised and recorded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from advisor.cli.common import store_of


@click.command("trace")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--into",
    "into",
    metavar="RUN",
    default=None,
    help="Attach the profile to this run (id, prefix, path or 'latest') so `advisor check` uses "
    "it.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0.1),
    default=None,
    help="Seconds XProf's converter may take (default 120, or $ADVISOR_TRACE_TIMEOUT_S).",
)
@click.option(
    "--memory-mb",
    type=click.IntRange(min=64),
    default=None,
    help="Memory limit of the converter process (default 8192, or $ADVISOR_TRACE_MEMORY_MB).",
)
@click.option(
    "--force", is_flag=True, help="For a run: summarise again captures that already have a summary."
)
@click.pass_context
def command(
    ctx: click.Context,
    path: Path,
    into: str | None,
    fmt: str,
    timeout_s: float | None,
    memory_mb: int | None,
    force: bool,
) -> None:
    """Summarise a TensorBoard / XProf profile (steps, input share, top ops, communication)."""
    from advisor.render.trace import render_text

    results, notes = store_of(ctx).summarize_traces(
        path, into=into, force=force, timeout_s=timeout_s, memory_mb=memory_mb
    )
    if fmt == "json":
        payload: Any = [dict(s.model_dump(mode="json"), path=p) for p, s in results]
        click.echo(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        for p, summary in results:
            click.echo(render_text(summary, p))
        for note in notes:
            click.echo(note, err=True)
