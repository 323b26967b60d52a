"""Helpers shared by subcommands: the store from the context, the console, the common options."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from advisor.service import RunService


def runs_dir_option(ctx: click.Context) -> str | None:
    obj = ctx.find_root().obj or {}
    return obj.get("runs_dir")


def store_of(ctx: click.Context) -> RunService:
    """The store of this command line (``--runs-dir``, ``$ADVISOR_RUNS_DIR`` or ./advisor-runs)."""
    from advisor.service import RunService

    return RunService(runs_dir_option(ctx))


def console(stderr: bool = False) -> Console:
    """A rich console; when piped, wide enough that tables do not wrap ids."""
    import sys

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich exits 1 here: a closed pipe is no verdict
            raise BrokenPipeError

    stream = sys.stderr if stderr else sys.stdout
    return _Console(stderr=stderr, width=None if stream.isatty() else 120)


rules_dir_option = click.option(
    "--rules-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Rule files to read instead of the built-in rules.",
)
text_or_json_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
