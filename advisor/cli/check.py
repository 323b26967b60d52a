"""``advisor check [RUN | RUNS_DIR]``: diagnose runs against the checklist; exit 0 / 1 / 2 / 3.

Exit codes: 0 clean; 1 a finding at or above ``--fail-on``, or a regression versus
``--baseline`` or in ``--history``; 2 a usage, input or rule error; 3 a run that cannot be judged
(killed, still running, failed, empty, a collector failed, data unreadable; a comparison with
``--baseline RUN`` too short or too noisy to tell) unless ``--allow-incomplete``. A ``--history``
too short for change points gates nothing: it is said, and exits 0.
``--exit-zero`` turns 1 into 0 only. Over a store, an unreadable run is reported on stderr and
the others are still checked. Imports nothing heavy: no TensorFlow, textual or matplotlib.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from advisor.cli.common import rules_dir_option, store_of
from advisor.errors import first_line
from advisor.render import FORMATS

if TYPE_CHECKING:
    from advisor.service import RunService

FAIL_LEVELS = ("info", "warning", "error")


def selection_options(func: click.decorators.FC) -> click.decorators.FC:
    """--select / --extend-select / --ignore / --config / --threshold / --rules-dir."""
    options = [
        click.option(
            "--select",
            multiple=True,
            metavar="CODES",
            help="Only these codes or prefixes (comma-separated; replaces the configured "
            "selection).",
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="CODES",
            help="Add codes or prefixes to the selection.",
        ),
        click.option(
            "--ignore", multiple=True, metavar="CODES", help="Leave out codes or prefixes."
        ),
        click.option(
            "--threshold",
            "thresholds",
            multiple=True,
            metavar="CODE.NAME=VALUE",
            help="Override a rule threshold, e.g. M108.warn_fraction=0.15.",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            default=None,
            help="A pyproject.toml (or advisor TOML) to read instead of the nearest "
            "pyproject.toml.",
        ),
        rules_dir_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def is_store(target: str | None) -> bool:
    """True when ``target`` is a directory of runs rather than one run."""
    from advisor.store.schema import MANIFEST_NAME

    if not target:
        return False
    path = Path(target)
    return path.is_dir() and not (path / MANIFEST_NAME).exists()


def run_targets(target: str | None, store: RunService) -> tuple[list[Path], list[tuple[Path, str]]]:
    """A run (id, prefix, path, 'latest') or every run under a store directory (or s3:// URL);
    and, for a store, the entries that should be runs but cannot be read (with the reason)."""
    from advisor.errors import RunNotFoundError

    target = store.localize(target)
    if is_store(target):
        assert target is not None
        runs, unlisted = store.run_dirs(Path(target)), store.unlisted(Path(target))
        if not runs and not unlisted:
            raise RunNotFoundError(f"{target}: neither a run nor a store with runs")
        return runs, unlisted
    return [store.resolve(target)], []


def _baseline(store: RunService, ref: str) -> Any:
    """The run to compare with, or a report saved as JSON (``advisor export``, ``check --format
    json``)."""
    if Path(ref).is_file():
        from advisor.diagnosis.report import REPORT_SCHEMA_VERSION, Report
        from advisor.errors import UsageError

        try:
            data = json_load(Path(ref))
            if isinstance(data, list) and len(data) == 1:
                data = data[0]
            if int(data.get("schema_version", 0)) > REPORT_SCHEMA_VERSION:
                raise UsageError(
                    f"--baseline {ref}: report schema {data['schema_version']} is newer than "
                    f"{REPORT_SCHEMA_VERSION}; upgrade advisor"
                )
            return Report.model_validate(data)
        except UsageError:
            raise
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            reason = first_line(exc)
            raise UsageError(
                f"--baseline {ref}: not a readable advisor report ({reason})"
            ) from None
    return store.read(ref)


def _refuse_itself(base_run: Any, path: Path, ref: str | None) -> None:
    """A run compared with itself passes whatever it measured: a usage error (over a store, the
    baseline among the runs checked is compared with itself, as it should)."""
    from advisor.errors import UsageError

    own = getattr(base_run, "path", None)
    if own is not None and Path(own).resolve() == Path(path).resolve():
        raise UsageError(
            f"--baseline {ref} is the run being checked ({path.name}): compare with another run"
        )


def json_load(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def _use_color(color: bool | None, output: str | None) -> bool:
    if output:
        return False
    if color is not None:
        return color
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _diagnose_all(
    store: RunService,
    paths: list[Path],
    unlisted: list[tuple[Path, str]],
    store_wide: bool,
    options: dict[str, Any],
    config: Any,
) -> tuple[list[Any], int]:
    """The report of every run, and how many could not be read (each one line on stderr)."""
    from advisor.cli.main import one_line

    reports = []
    unreadable = len(unlisted)
    for path, reason in unlisted:
        click.echo(f"advisor: error: run {path.name} unreadable: {one_line(reason)}", err=True)
    for path in paths:
        try:
            run = store.read(path)
        except Exception as exc:  # over a store, one unreadable run is one line, not the end
            if not store_wide:
                raise
            unreadable += 1
            click.echo(
                f"advisor: error: run {path.name} unreadable: {one_line(str(exc))}", err=True
            )
            continue
        reports.append(store.diagnose(run, config, **options))
    return reports, unreadable


@click.command("check")
@click.argument("target", required=False, metavar="[RUN | RUNS_DIR]")
@selection_options
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_LEVELS),
    default=None,
    help="Lowest severity that fails (default: warning, or fail-on in [tool.advisor]).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the report to FILE instead of stdout.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings or a regression.")
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Judge runs that were killed, are empty or lost data instead of exiting 3.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="RUN|REPORT.json",
    help="Compare samples/s, samples/$ and every part of the fit with this run, against both "
    "runs' noise; or samples/s and samples/$ with a saved JSON report (advisor export).",
)
@click.option(
    "--max-regression",
    type=float,
    default=None,
    metavar="PCT",
    help="The size that matters (default 5): fail when a drop beyond the noise is larger than "
    "PCT percent (of samples/s, or of the step time for a part of the fit).",
)
@click.option(
    "--history",
    "use_history",
    is_flag=True,
    help="Gate on the latest change point of the history of the runs sharing this run's name "
    "(see advisor history).",
)
@click.option(
    "--group-by",
    default=None,
    metavar="KEY",
    help="With --history: one point per value of this tag (e.g. commit).",
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour in text output (default: when stdout is a terminal).",
)
@click.pass_context
def command(
    ctx: click.Context,
    target: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    thresholds: tuple[str, ...],
    config_file: str | None,
    rules_dir: str | None,
    fail_on: str | None,
    fmt: str,
    output: str | None,
    exit_zero: bool,
    allow_incomplete: bool,
    baseline: str | None,
    max_regression: float | None,
    use_history: bool,
    group_by: str | None,
    color: bool | None,
) -> None:
    """Diagnose RUN (an id, prefix, path or 'latest'; default: latest) or every run in RUNS_DIR."""
    from advisor.diagnosis import load_rules
    from advisor.diagnosis.config import load_config, parse_threshold_options
    from advisor.errors import UsageError
    from advisor.render import render_many

    if max_regression is not None and baseline is None and not use_history:
        raise UsageError("--max-regression needs --baseline RUN or --history")
    if group_by is not None and not use_history:
        raise UsageError("--group-by needs --history")
    store = store_of(ctx)
    load_rules(rules_dir)  # a broken rule file is an error before any run is read
    config = load_config(config_file)
    overrides = parse_threshold_options(thresholds)
    base_run = _baseline(store, baseline) if baseline else None
    paths, unlisted = run_targets(target, store)
    store_wide = is_store(target)
    if base_run is not None and not store_wide:
        _refuse_itself(base_run, paths[0], baseline)
    reports, unreadable = _diagnose_all(
        store,
        paths,
        unlisted,
        store_wide,
        dict(
            select=select or None,
            extend_select=extend_select,
            ignore=ignore,
            fail_on=fail_on,
            thresholds=overrides,
            rules_dir=rules_dir,
            baseline=base_run,
            max_regression_pct=5.0 if max_regression is None else max_regression,
        ),
        config,
    )
    if not reports:
        ctx.exit(2)
    if use_history:
        from advisor.cli.history import attach_history_gate

        if store_wide:
            raise UsageError("--history checks one run, not a store")
        limit = 5.0 if max_regression is None else max_regression
        attach_history_gate(store, reports[0], group_by, limit)
    level = reports[0].settings.fail_on if reports[0].settings else "warning"
    width = 100 if output or not sys.stdout.isatty() else shutil.get_terminal_size().columns
    text = render_many(reports, fmt, color=_use_color(color, output), width=width, fail_on=level)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    codes = [r.exit_code(level, allow_incomplete=allow_incomplete) for r in reports]
    if unreadable:
        codes.append(2)
    code = next((c for c in (2, 3, 1) if c in codes), 0)
    if exit_zero and code == 1:
        code = 0
    ctx.exit(code)
