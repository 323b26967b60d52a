"""``advisor schema``: the JSON Schema of the report that `check --format json` and `export` write."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("schema")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), default="-", show_default=True
)
def command(output: str) -> None:
    """Print the JSON Schema (draft 2020-12) of the diagnosis report, with its schema_version."""
    from advisor.diagnosis.report import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
