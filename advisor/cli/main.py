"""Entry point: ``advisor [--runs-dir DIR] COMMAND ...``.

Each subcommand module under ``advisor.cli`` defines a click command (or group) named ``command``
and is listed in ``COMMANDS``. Modules import what they need inside the command function, so
``advisor check`` never pays for TensorFlow, textual or matplotlib.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from advisor._version import __version__
from advisor.errors import AdvisorError

# command name → module under advisor.cli that defines `command`
COMMANDS: dict[str, str] = {
    "runs": "advisor.cli.runs",
    "show": "advisor.cli.show",
    "demo": "advisor.cli.demo",
    "scale": "advisor.cli.scale",
    "report": "advisor.cli.report",
    "trace": "advisor.cli.trace",
    "check": "advisor.cli.check",
    "rule": "advisor.cli.rule",
    "rules": "advisor.cli.rules",
    "export": "advisor.cli.export",
    "schema": "advisor.cli.schema",
    "tui": "advisor.cli.tui",
}


class LazyGroup(click.Group):
    """Loads a subcommand's module only when that subcommand runs (or help lists it)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return importlib.import_module(module).command  # type: ignore[no-any-return]

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AdvisorError as exc:
            click.echo(f"advisor: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (BrokenPipeError, KeyboardInterrupt):
            ctx.exit(130)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="advisor")
@click.option(
    "--runs-dir",
    envvar="ADVISOR_RUNS_DIR",
    type=click.Path(file_okay=False),
    default=None,
    help="Run store (default: $ADVISOR_RUNS_DIR or ./advisor-runs).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
@click.pass_context
def cli(ctx: click.Context, runs_dir: str | None, verbose: bool) -> None:
    """A performance advisor for Keras training."""
    ctx.ensure_object(dict)
    ctx.obj["runs_dir"] = runs_dir
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr, format="%(message)s"
    )


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="advisor", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
