"""``advisor show RUN``: a readable summary of one run (and its diagnosis when rules exist)."""

from __future__ import annotations

import json

import click

from advisor.cli.common import runs_dir_option


@click.command("show")
@click.argument("run", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-diagnosis", is_flag=True, help="Only the measurements, not the findings.")
@click.pass_context
def command(ctx: click.Context, run: str | None, fmt: str, no_diagnosis: bool) -> None:
    """Summarise RUN (an id, a unique prefix, a path, or 'latest'; default: latest)."""
    from advisor.analysis.registry import registry
    from advisor.render.summary import run_summary
    from advisor.store.reader import read_run

    loaded = read_run(run, runs_dir_option(ctx))
    facts, errors = registry().derive(loaded)
    if fmt == "json":
        payload = {"manifest": loaded.manifest.model_dump(mode="json"), "status": loaded.status,
                   "facts": facts, "errors": errors, "warnings": loaded.warnings}
        click.echo(json.dumps(payload, indent=2, sort_keys=True, default=str))
        return
    from advisor.cli.common import console as make_console

    console = make_console()
    console.print(run_summary(loaded, facts))
    for err in errors:
        console.print(f"[yellow]note:[/] {err}")
    if not no_diagnosis:
        show_diagnosis(console, loaded)


def show_diagnosis(console: object, run: object) -> None:
    """Print the findings when the rule engine is installed (it is part of the package)."""
    try:
        from advisor.diagnosis import diagnose
        from advisor.render import render
    except ImportError:
        return
    report = diagnose(run)
    console.print()  # type: ignore[attr-defined]
    console.print(render(report, "text"), end="")  # type: ignore[attr-defined]
