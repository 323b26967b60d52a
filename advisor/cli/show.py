"""``advisor show RUN``: a readable summary of one run and its diagnosis (read and derived once)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from advisor.cli.common import store_of

if TYPE_CHECKING:
    from rich.console import Console

    from advisor.service import Analysis, RunService


@click.command("show")
@click.argument("run", required=False)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("--no-diagnosis", is_flag=True, help="Only the measurements, not the findings.")
@click.pass_context
def command(ctx: click.Context, run: str | None, fmt: str, no_diagnosis: bool) -> None:
    """Summarise RUN (an id, a unique prefix, a path, or 'latest'; default: latest)."""
    store = store_of(ctx)
    analysis = store.analyse(run)
    if fmt == "json":
        payload = {
            "manifest": analysis.run.manifest.model_dump(mode="json"),
            "status": analysis.run.status,
            "facts": analysis.facts,
            "errors": analysis.errors,
            "warnings": analysis.run.warnings,
            "problems": analysis.run.problems,
            "incomplete": analysis.run.incomplete,
        }
        click.echo(json.dumps(payload, indent=2, sort_keys=True, default=str))
        return
    from advisor.cli.common import console as make_console

    print_run(make_console(), store, analysis, diagnosis=not no_diagnosis)


def print_run(
    console: Console, store: RunService, analysis: Analysis, *, diagnosis: bool = True
) -> None:
    """A run's summary, its derivation notes and its diagnosis, as ``show`` and ``demo`` print them.

    Text that comes from the run or the rules is printed as text, never as console markup:
    ``keras-advisor[profile]`` is an extra's name (markup once swallowed it)."""
    from rich.text import Text

    from advisor.render.summary import run_summary

    console.print(run_summary(analysis.overview(), analysis.facts))
    for err in analysis.errors:
        console.print(Text.assemble(("note:", "yellow"), f" {err}"))
    if diagnosis:
        from advisor.render import render

        console.print()
        console.print(
            render(store.diagnose(analysis.run), "text"), end="", markup=False, highlight=False
        )
