"""``advisor tui [RUNS_DIR | RUN | SWEEP]``: the terminal interface (needs the ``tui`` extra)."""

from __future__ import annotations

import click

from advisor.cli.common import runs_dir_option


@click.command("tui")
@click.argument("target", required=False)
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default="advisor-export",
    show_default=True,
    help="Where e (JSON reports) and p (plots) write.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A pyproject.toml to read [tool.advisor] from instead of the nearest one.",
)
@click.option(
    "--poll",
    "poll_s",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    help="Seconds between looks at a live run's files.",
)
@click.pass_context
def command(
    ctx: click.Context, target: str | None, export_dir: str, config_file: str | None, poll_s: float
) -> None:
    """Browse runs, findings, scaling sweeps and live runs in the terminal.

    \b
    advisor tui                    # the store: ./advisor-runs or $ADVISOR_RUNS_DIR
    advisor tui path/to/runs       # another store
    advisor tui 20261129-2233      # a run (id, prefix or directory): its findings, or live
    advisor tui sweep-20261129     # a sweep (id or directory): its scaling report
    """
    from advisor.errors import UsageError

    try:
        import textual  # noqa: F401
        import textual_plotext  # noqa: F401
    except ImportError:
        raise UsageError("advisor tui needs textual: pip install 'keras-advisor[tui]'") from None
    from advisor.tui.app import make_app

    app = make_app(
        target,
        runs_dir=runs_dir_option(ctx),
        export_dir=export_dir,
        config=config_file or "auto",
        poll_s=poll_s,
    )
    app.run()
    ctx.exit(app.return_code or 0)
