"""``advisor --runs-dir s3://bucket/prefix upload``: send the runs waiting in the local spool.

Training into an S3 store writes locally first and uploads in the background; a run whose upload
failed (no network, a missing permission) stays in the spool. This command uploads it, checks
every file against S3, and removes the spool of each ended run once everything is confirmed.
"""

from __future__ import annotations

import click

from advisor.cli.common import runs_dir_option


@click.command("upload")
@click.argument("store", required=False, metavar="[s3://BUCKET/PREFIX]")
@click.pass_context
def command(ctx: click.Context, store: str | None) -> None:
    """Upload the spooled runs of STORE (default: --runs-dir / $ADVISOR_RUNS_DIR)."""
    from advisor.errors import UsageError
    from advisor.service.cloud import upload_spooled
    from advisor.store.paths import store_url

    url = store_url(store or runs_dir_option(ctx))
    if url is None:
        raise UsageError("upload needs an S3 store: advisor --runs-dir s3://bucket/prefix upload")
    results = upload_spooled(url)
    if not results:
        click.echo(f"nothing waiting in the spool of {url}")
    for run_id, sent, removed, folder in results:
        kept = "spool removed" if removed else f"kept in {folder} (still being written)"
        click.echo(f"{run_id}: {sent} file(s) uploaded to {url}/{run_id}; {kept}")
