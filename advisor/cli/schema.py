"""``advisor schema``: the JSON Schema of the report that `check --format json` and `export` write,
or with ``--rules`` of a rule file."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("schema")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), default="-", show_default=True
)
@click.option(
    "--rules",
    "rules",
    is_flag=True,
    help="The schema of a rule file (rules/*.yaml) instead of the report.",
)
def command(output: str, rules: bool) -> None:
    """Print the JSON Schema (draft 2020-12) of the diagnosis report, with its schema_version
    (``--rules``: of a rule file; facts, conditions and templates are checked when rules load)."""
    if rules:
        from advisor.diagnosis import rule_model as source
    else:
        from advisor.diagnosis import report as source  # type: ignore[no-redef]

    text = json.dumps(source.json_schema(), indent=2) + "\n"
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
