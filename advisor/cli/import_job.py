"""``advisor import sagemaker JOB_NAME``: a run from a SageMaker training job, for ``advisor
check``.

The run holds what SageMaker knows (instance type and count, times, input mode of each channel)
and the job's CloudWatch system metrics, so a job that never ran the advisor's callback can
still be diagnosed.
"""

from __future__ import annotations

import click

from advisor.cli.common import store_of


@click.group("import")
def command() -> None:
    """Build a run from a job that ran elsewhere."""


@command.command("sagemaker")
@click.argument("job_name")
@click.option(
    "--region", default=None, help="AWS region of the job (default: boto3's, e.g. $AWS_REGION)."
)
@click.option("--no-metrics", is_flag=True, help="Skip the CloudWatch system metrics.")
@click.option(
    "--price-per-hour",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="USD per instance-hour (default: the AWS price with --pricing aws, else unknown).",
)
@click.option(
    "--pricing",
    type=click.Choice(["table", "aws"]),
    default="table",
    show_default=True,
    help="aws: ask the AWS Pricing API for the SageMaker price of the instance.",
)
@click.option("--name", default=None, help="A name for the run (default: the job name).")
@click.pass_context
def sagemaker(
    ctx: click.Context,
    job_name: str,
    region: str | None,
    no_metrics: bool,
    price_per_hour: float | None,
    pricing: str,
    name: str | None,
) -> None:
    """Import the SageMaker training job JOB_NAME as a run."""
    from advisor.service.cloud import import_sagemaker

    store = store_of(ctx)
    path, notes = import_sagemaker(
        store,
        job_name,
        region,
        metrics=not no_metrics,
        name=name,
        price_per_hour=price_per_hour,
        live_price=pricing == "aws",
    )
    for note in notes:
        click.echo(f"advisor: note: {note}", err=True)
    where = f"{store.url}/{path.name}" if store.url else str(path)
    click.echo(
        f"imported {job_name} as run {path.name} ({where}); diagnose it with `advisor check "
        f"{path.name}`"
    )
