"""``advisor rule CODE``: explain one rule (its documentation page, or its definition as JSON)."""

from __future__ import annotations

import difflib
import json

import click

from advisor.cli.common import rules_dir_option, text_or_json_option


@click.command("rule")
@click.argument("code")
@text_or_json_option
@rules_dir_option
def command(code: str, fmt: str, rules_dir: str | None) -> None:
    """Explain the rule CODE (a code like M108 or a name like input-bound)."""
    from advisor.diagnosis.docgen import rule_dict, rule_markdown
    from advisor.diagnosis.rules import load_rules
    from advisor.errors import UsageError

    rules = load_rules(rules_dir)
    wanted = code.strip()
    match = next((r for r in rules if r.code == wanted.upper() or r.name == wanted.lower()), None)
    if match is None:
        names = [r.code for r in rules] + [r.name for r in rules]
        close = difflib.get_close_matches(wanted, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `advisor rules`"
        raise UsageError(f"no rule {code!r}{hint}")
    if fmt == "json":
        click.echo(json.dumps(rule_dict(match), indent=2))
    else:
        click.echo(rule_markdown(match).split("<!--")[0].rstrip())
