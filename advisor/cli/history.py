"""``advisor history``: samples/s and goodput of a store's runs over time, with change points.

Exit codes: 0 shown; 2 a usage error (a bad ``--tag``, ``--last`` below 1, no run selected).
Imports matplotlib only for ``--plot``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from advisor.cli.common import store_of, text_or_json_option

if TYPE_CHECKING:
    from advisor.analysis.history import History
    from advisor.diagnosis.report import Report
    from advisor.service import RunService


def parse_tag(tag: str | None) -> tuple[str, str] | None:
    """``KEY=VALUE`` → (key, value); a usage error otherwise."""
    from advisor.errors import UsageError

    if tag is None:
        return None
    key, sep, value = tag.partition("=")
    if not sep or not key:
        raise UsageError(f"--tag {tag!r}: expected KEY=VALUE")
    return key, value


def select_history(
    store: RunService,
    name: str | None,
    tag: str | None,
    group_by: str | None,
    last: int | None,
) -> History:
    """The history asked for; without ``--name`` or ``--tag``, the latest run's name."""
    from advisor.errors import UsageError
    from advisor.service.comparisons import history

    pair = parse_tag(tag)
    if name is None and pair is None:
        name = store.read("latest").manifest.name
        if name is None:
            raise UsageError("the latest run has no name: pass --name NAME or --tag KEY=VALUE")
    found = history(store, name=name, tag=pair, group_by=group_by, last=last)
    if not found.points:
        raise UsageError(
            f"no runs with {found.selection}" + (f" and a {group_by} tag" if group_by else "")
        )
    return found


@click.command("history")
@click.option("--name", default=None, help="Runs with this name (default: the latest run's).")
@click.option("--tag", default=None, metavar="KEY=VALUE", help="Runs with this tag.")
@click.option(
    "--group-by",
    default=None,
    metavar="KEY",
    help="One point per value of this tag (e.g. commit): the median of its runs.",
)
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="The newest N runs only.",
)
@text_or_json_option
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Also draw samples/s and goodput with the change points into this image file.",
)
@click.pass_context
def command(
    ctx: click.Context,
    name: str | None,
    tag: str | None,
    group_by: str | None,
    last: int,
    fmt: str,
    plot: str | None,
) -> None:
    """samples/s and goodput of the runs sharing a name or tag, oldest first, with the change
    points found in them (E-divisive means with a t-test)."""
    from advisor.render.history import history_text, write_history_plot

    found = select_history(store_of(ctx), name, tag, group_by, last)
    if fmt == "json":
        click.echo(found.model_dump_json(indent=2))
    else:
        click.echo(history_text(found), nl=False)
    if plot:
        write_history_plot(found, plot)
        click.echo(f"plot: {plot}", err=True)


def attach_history_gate(
    store: RunService, report: Report, group_by: str | None, max_regression_pct: float
) -> None:
    """``advisor check --history``: the report's gate is the latest change point of the history
    of the runs sharing its run's name (grouped by ``group_by``), up to and including it."""
    from advisor.analysis.history import history_gate
    from advisor.diagnosis.report import Regression
    from advisor.errors import UsageError
    from advisor.service.comparisons import history

    if not report.run.name:
        raise UsageError(f"--history: run {report.run.run_id} has no name to find its history by")
    run_id = report.run.run_id
    found = history(store, name=report.run.name, group_by=group_by, until=run_id)
    if not any(run_id in point.run_ids for point in found.points):  # a gate of other runs only
        why = f": it has no {group_by} tag" if group_by else ""
        raise UsageError(f"--history: run {run_id} is not in the history of {found.selection}{why}")
    gate = history_gate(found, max_regression_pct)
    if report.regression is None:
        report.regression = Regression(
            baseline_run=f"history of {found.selection}",
            max_regression_pct=max_regression_pct,
            metrics=[],
            failed=False,
        )
    report.regression.history = gate
    report.regression.failed = report.regression.failed or gate.failed
