"""``advisor export RUN -o FILE``: the full diagnosis report as versioned JSON; ``--to mlflow``:
into MLflow."""

from __future__ import annotations

from pathlib import Path

import click

from advisor.cli.common import rules_dir_option, store_of


@click.command("export")
@click.argument("run", required=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default="-",
    show_default=True,
    help="File to write ('-' for stdout).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A pyproject.toml to read instead of the nearest one.",
)
@rules_dir_option
@click.option(
    "--to",
    "target",
    type=click.Choice(["json", "mlflow"]),
    default="json",
    show_default=True,
    help="json: the report to --output; mlflow: metrics, report and plots into an MLflow run.",
)
@click.option(
    "--mlflow-run",
    default=None,
    help="mlflow: the MLflow run id to log into "
    "(default: the run it was trained in, else a new run).",
)
@click.option(
    "--tracking-uri", default=None, help="mlflow: tracking URI (default: $MLFLOW_TRACKING_URI)."
)
@click.option(
    "--experiment", default=None, help="mlflow: experiment of a new MLflow run (default: MLflow's)."
)
@click.option(
    "--series/--no-series",
    default=True,
    show_default=True,
    help="mlflow: also log the per-window series (skipped when the MLflow run has it).",
)
@click.pass_context
def command(
    ctx: click.Context,
    run: str | None,
    output: str,
    config_file: str | None,
    rules_dir: str | None,
    target: str,
    mlflow_run: str | None,
    tracking_uri: str | None,
    experiment: str | None,
    series: bool,
) -> None:
    """Write the JSON report of RUN (default: latest); it validates against `advisor schema`.

    \b
    With --to mlflow: log RUN's metrics (advisor.*), report and plots into MLflow.
    """
    from advisor.diagnosis.config import load_config
    from advisor.render import render

    if target == "mlflow":
        from advisor.integrations.mlflow_export import export_run

        result = export_run(
            store_of(ctx),
            run or "latest",
            mlflow_run=mlflow_run,
            tracking_uri=tracking_uri,
            experiment=experiment,
            series=series,
            config=load_config(config_file),
            rules_dir=rules_dir,
        )
        what = "new MLflow run" if result.created else "MLflow run"
        click.echo(
            f"{what} {result.mlflow_run_id} at {result.tracking_uri}: {result.metrics} metrics, "
            f"{len(result.artifacts)} artifacts",
            err=True,
        )
        for note in result.notes:
            click.echo(f"  note: {note}", err=True)
        return

    report = store_of(ctx).diagnose(run or "latest", load_config(config_file), rules_dir=rules_dir)
    text = render(report, "json")
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(
            f"{output}: report of run {report.run.run_id} ({len(report.failures)} findings)",
            err=True,
        )
