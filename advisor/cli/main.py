"""Entry point: ``advisor [--runs-dir DIR] COMMAND ...``.

Each subcommand module under ``advisor.cli`` defines a click command (or group) named ``command``
and is listed in ``COMMANDS``. Modules import what they need inside the command function, so
``advisor check`` never pays for TensorFlow, textual or matplotlib.

Exit codes mean one thing in every command (docs/check.md): 0 success; 1 findings at
``--fail-on`` or a regression (``check`` only — what CI reads as a verdict); 2 a usage error or
input that cannot be read, and any unexpected error, as one line on stderr (``--debug`` adds the
traceback); 3 a run that cannot be judged (``check``); 130 interrupted; 141 the output pipe
was closed early (``advisor show RUN | head -1``).
"""

from __future__ import annotations

import importlib
import logging
import sys
import traceback
from typing import Any, NoReturn

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
    "history": "advisor.cli.history",
    "rule": "advisor.cli.rule",
    "rules": "advisor.cli.rules",
    "export": "advisor.cli.export",
    "schema": "advisor.cli.schema",
    "price": "advisor.cli.price",
    "data": "advisor.cli.data",
    "import": "advisor.cli.import_job",
    "upload": "advisor.cli.upload",
    "tui": "advisor.cli.tui",
    "backends": "advisor.cli.backends",
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
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            if exc.exit_code == 1:  # e.g. click.FileError: input, not a verdict
                exc.exit_code = USAGE_ERROR  # type: ignore[misc]
            raise
        except click.Abort:
            ctx.exit(INTERRUPTED)
        except AdvisorError as exc:
            fail(ctx, str(exc), exc.exit_code, exc)
        except BrokenPipeError:  # the reader went away (`advisor show RUN | head -1`)
            silence_stdout()
            ctx.exit(CLOSED_PIPE)
        except KeyboardInterrupt:
            ctx.exit(INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 — never a traceback, never exit 1
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            fail(
                ctx,
                f"internal error ({reason}); run with --debug for the traceback",
                USAGE_ERROR,
                exc,
            )


USAGE_ERROR = 2
INTERRUPTED = 130
CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool whose output pipe closed


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail on the closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured by a test runner)
        pass


def one_line(text: str, limit: int = 500) -> str:
    """A message as one line: whitespace folded, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fail(ctx: click.Context, message: str, code: int, exc: BaseException | None = None) -> NoReturn:
    """Print ``advisor: error: <message>`` as one line on stderr (the traceback too with
    ``--debug``) and exit with ``code``."""
    if exc is not None and (ctx.find_root().obj or {}).get("debug"):
        sys.stderr.write("".join(traceback.format_exception(exc)))
    line = f"advisor: error: {one_line(message)}\n"
    stream = sys.stderr
    try:
        stream.write(line)
    except UnicodeEncodeError:
        stream.write(line.encode("ascii", "backslashreplace").decode("ascii"))
    stream.flush()
    ctx.exit(code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="advisor")
@click.option(
    "--runs-dir",
    envvar="ADVISOR_RUNS_DIR",
    type=click.Path(file_okay=False),
    default=None,
    help="Run store: a folder or s3://bucket/prefix (default: $ADVISOR_RUNS_DIR or "
    "./advisor-runs).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
@click.option("--debug", is_flag=True, help="Show the traceback of an error (exit code 2).")
@click.pass_context
def cli(ctx: click.Context, runs_dir: str | None, verbose: bool, debug: bool) -> None:
    """A performance advisor for Keras training.

    Exit codes: 0 success; 1 findings at --fail-on or a regression (check); 2 usage error or
    unreadable input (one line on stderr); 3 a run that cannot be judged (check)."""
    ctx.ensure_object(dict)
    ctx.obj["runs_dir"] = runs_dir
    ctx.obj["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr, format="%(message)s"
    )


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="advisor", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        return USAGE_ERROR  # sys.exit("message") somewhere below: not a verdict
    return 0


if __name__ == "__main__":
    sys.exit(main())
