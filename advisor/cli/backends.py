"""``advisor backends MODEL.keras --data XY.npz``: the model's training speed on every installed
Keras backend × compile mode, each in a fresh process on cached batches (compute only), beside
the run's own (``--own``, default ``$KERAS_BACKEND`` and the file's ``jit_compile``). Before
it measures, the portability table: what in the model's own classes ties it to one backend, and
the ``keras.ops`` replacement; ``--port`` measures the model with those replacements made."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click


@click.command("backends")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--data",
    "data",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An .npz with arrays x and y (numpy.savez): the batches are its first rows.",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option(
    "--candidates",
    default="all",
    show_default=True,
    help="Comma-separated BACKEND or BACKEND+jit (tensorflow, jax, torch), or 'all'.",
)
@click.option(
    "--own",
    default=None,
    help="The run's own, e.g. 'jax+jit' (default: $KERAS_BACKEND and the file's jit_compile).",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0.1),
    default=3.0,
    show_default=True,
    help="Measured seconds per candidate, its rounds together.",
)
@click.option("--rounds", type=click.IntRange(min=1), default=6, show_default=True)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=1),
    default=300.0,
    show_default=True,
    help="The whole comparison; candidates that do not fit are skipped.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Seconds one candidate's process may take before it is killed.",
)
@click.option(
    "--torch-threads",
    type=click.IntRange(min=1),
    default=None,
    help="torch.set_num_threads in torch's processes.",
)
@click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="MODULE",
    help="A module defining the model's custom classes (imported by every process first).",
)
@click.option(
    "--port",
    is_flag=True,
    help="Measure the portable variant: the custom classes' backend calls replaced by keras.ops "
    "(printed as a unified diff); exit 2 when a blocking call has no replacement.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def command(
    model: Path,
    data: Path,
    batch_size: int,
    candidates: str,
    own: str | None,
    seconds: float,
    rounds: int,
    max_seconds: float,
    timeout: float,
    torch_threads: int | None,
    imports: tuple[str, ...],
    port: bool,
    fmt: str,
) -> None:
    """Measure MODEL (a saved, compiled .keras file) on every backend × compile mode; first,
    what in its custom classes ties it to a backend (the portability table)."""
    from advisor.experiments.backends import measure_exported, portable
    from advisor.experiments.backends.files import exported_from_files, own_from_file

    names = None if candidates.strip() == "all" else [n for n in candidates.split(",") if n.strip()]
    config = own_from_file(model, own)
    table = portable.table_of_saved(model, list(imports))
    if fmt == "text":
        click.echo(portable.render_table(table.rows()) + "\n")
    with tempfile.TemporaryDirectory(prefix="advisor-backends-") as tmp:
        exported = exported_from_files(model, data, batch_size, Path(tmp), list(imports))
        ported = portable.port(table, Path(tmp) / "ported") if port else None
        if ported is not None:
            exported.ported = ported.files
            if fmt == "text":
                click.echo(f"The portable variant ({ported.replaced} calls replaced):")
                click.echo(ported.diff)
        result = measure_exported(
            exported,
            config,
            names,
            workdir=Path(tmp),
            seconds=seconds,
            rounds=rounds,
            max_seconds=max_seconds,
            timeout=timeout,
            torch_threads=torch_threads,
        )
    result.portability = table.rows()
    if ported is not None:
        result.ported, result.diff = ported.replaced, ported.diff
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(result.render())
