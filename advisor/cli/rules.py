"""``advisor rules``: every rule, one line each, filterable by section, severity or selector."""

from __future__ import annotations

import io
import json
import shutil
import sys

import click

from advisor.cli.common import rules_dir_option, text_or_json_option


@click.command("rules")
@click.option(
    "--section",
    multiple=True,
    metavar="SECTION",
    help="Only these sections (M1, I2, S3, C4, G5, D6, P7).",
)
@click.option(
    "--severity",
    multiple=True,
    type=click.Choice(["info", "warning", "error"]),
    help="Only rules of this default severity.",
)
@click.option("--select", multiple=True, metavar="CODES", help="Only these codes or prefixes.")
@text_or_json_option
@rules_dir_option
def command(
    section: tuple[str, ...],
    severity: tuple[str, ...],
    select: tuple[str, ...],
    fmt: str,
    rules_dir: str | None,
) -> None:
    """List the rules: code, name, severity and what each checks."""
    from advisor.diagnosis.docgen import rule_dict
    from advisor.diagnosis.rules import SECTIONS, load_rules
    from advisor.diagnosis.selection import normalize, validate
    from advisor.errors import UsageError

    rules = list(load_rules(rules_dir))
    sections = {s.upper() for s in section}
    unknown = sections - set(SECTIONS)
    if unknown:
        raise UsageError(f"unknown section {min(unknown)!r}; sections: {', '.join(SECTIONS)}")
    selectors = normalize(select) or ()
    validate(selectors, [r.code for r in rules], "--select")
    chosen = [
        r
        for r in rules
        if (not sections or r.section in sections)
        and (not severity or r.severity in severity)
        and (not selectors or any(sel == "ALL" or r.code.startswith(sel) for sel in selectors))
    ]
    if fmt == "json":
        click.echo(json.dumps([rule_dict(r) for r in chosen], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in ("code", "name", "severity", "checks"):
        table.add_column(column, no_wrap=column != "checks")
    for r in chosen:
        table.add_row(r.code, r.name, r.severity, r.summary)
    tty = sys.stdout.isatty()
    buffer = io.StringIO()
    Console(
        file=buffer,
        width=shutil.get_terminal_size().columns if tty else 140,
        force_terminal=tty,
        no_color=not tty,
        highlight=False,
    ).print(table)
    click.echo("\n".join(line.rstrip() for line in buffer.getvalue().splitlines()))
    click.echo(f"{len(chosen)} of {len(rules)} rules")
