"""``advisor price INSTANCE [--region R] [--spot]``: the USD/h the advisor would use, and where
it comes from.

Asks AWS (the Pricing API, or spot price history with ``--spot``) through boto3's credentials,
caches the answer on disk, and falls back to the embedded table with a one-line note when AWS
cannot answer. ``--offline`` uses the table only.
"""

from __future__ import annotations

import json

import click


@click.command("price")
@click.argument("instance")
@click.option(
    "--region",
    default=None,
    help="AWS region (default: boto3's, e.g. $AWS_REGION, else us-east-1).",
)
@click.option("--spot", is_flag=True, help="The current spot price instead of on-demand.")
@click.option("--offline", is_flag=True, help="Only the embedded table: no AWS call.")
@click.option("--refresh", is_flag=True, help="Ask AWS even when a fresh price is cached.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def command(
    instance: str, region: str | None, spot: bool, offline: bool, refresh: bool, fmt: str
) -> None:
    """Price of INSTANCE per hour (Linux, shared tenancy) and where the number came from."""
    from advisor.errors import AdvisorError
    from advisor.reference.prices import resolve

    shown_region = region
    if not offline:
        try:
            from advisor.cloud.aws import region_name

            shown_region = region_name(region)
        except AdvisorError:
            shown_region = region
    found = resolve(instance, live=not offline, region=shown_region, spot=spot, refresh=refresh)
    market = "spot" if spot else "on-demand"
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "instance_type": instance,
                    "region": shown_region,
                    "market": market,
                    "usd_per_hour": found.usd_per_hour,
                    "source": found.source,
                    "detail": found.detail,
                    "note": found.note,
                },
                indent=2,
            )
        )
    elif found.usd_per_hour is not None:
        where = (
            f" in {shown_region}"
            if shown_region and not (found.source or "").startswith("table")
            else ""
        )
        detail = f"; {found.detail}" if found.detail else ""
        click.echo(
            f"{instance}{where}, {market}: ${found.usd_per_hour:g}/h ({found.source}{detail})"
        )
    if found.note:
        click.echo(f"advisor: note: {found.note}", err=True)
    if found.usd_per_hour is None:
        if fmt != "json":
            click.echo(f"{instance}: no {market} price known", err=True)
        raise click.exceptions.Exit(2)
