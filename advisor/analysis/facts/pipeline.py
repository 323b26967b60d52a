"""tf.data graph inspection and storage facts, from the ``pipeline`` record of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("pipeline.inspected", "", "the tf.data graph was inspected", "pipeline", "bool"),
    Fact("pipeline.prefetch", "", "the pipeline has a prefetch stage", "pipeline", "bool"),
    Fact("pipeline.prefetch_at_end", "", "a prefetch is the last stage", "pipeline", "bool"),
    Fact("pipeline.maps", "", "map stages", "pipeline"),
    Fact("pipeline.sequential_maps", "", "map stages without parallel calls", "pipeline"),
    Fact(
        "pipeline.random_maps",
        "",
        "map stages that draw random numbers (augmentation on the CPU)",
        "pipeline",
    ),
    Fact(
        "pipeline.sequential_interleaves",
        "",
        "interleave stages without parallel calls",
        "pipeline",
    ),
    Fact(
        "pipeline.fixed_parallelism",
        "",
        "parallel stages with a fixed value instead of AUTOTUNE",
        "pipeline",
    ),
    Fact(
        "pipeline.py_function",
        "",
        "a map function calls py_function / numpy_function",
        "pipeline",
        "bool",
    ),
    Fact("pipeline.cache", "", "the pipeline has a cache stage", "pipeline", "bool"),
    Fact(
        "pipeline.cache_after_random",
        "",
        "a cache stage follows a random op (caches one augmentation)",
        "pipeline",
        "bool",
    ),
    Fact(
        "pipeline.uncached_deterministic_map",
        "",
        "a deterministic map runs every epoch without cache (could move offline)",
        "pipeline",
        "bool",
    ),
    Fact(
        "pipeline.autotune_disabled",
        "",
        "dataset options switch autotuning or parallelism off",
        "pipeline",
        "bool",
    ),
    Fact("pipeline.stages", "", "the pipeline's stages, source first", "pipeline", "list"),
    Fact(
        "pipeline.advice",
        "",
        "the concrete changes for this pipeline, naming its stages (most valuable first)",
        "pipeline",
        "list",
    ),
    Fact("pipeline.file_source", "", "the pipeline reads files", "pipeline", "bool"),
    Fact("storage.files", "", "data files read by the pipeline", "storage"),
    Fact("storage.file_bytes.p10", "bytes", "10th percentile of data file size", "storage"),
    Fact("storage.file_bytes.p50", "bytes", "median data file size", "storage"),
    Fact("storage.file_bytes.p90", "bytes", "90th percentile of data file size", "storage"),
    Fact(
        "storage.compression",
        "",
        "compression of the data files (none, gzip, zlib, zstd)",
        "storage",
        "str",
    ),
    Fact(
        "pipeline.input_kind",
        "",
        "what fit reads: tf.data, numpy, generator, pydataset, torch",
        "pipeline",
        "str",
    ),
    Fact(
        "pipeline.dynamic_dims",
        "",
        "input dimensions beyond the batch axis whose size is not fixed (each new size compiles "
        "the step again under XLA)",
        "pipeline",
    ),
    Fact(
        "pipeline.batches_seen",
        "",
        "batches of the input read at train begin to see their shapes (a spec with open "
        "dimensions only)",
        "pipeline",
    ),
    Fact(
        "pipeline.varying_dims",
        "",
        "dimensions beyond the batch axis whose size changed among the batches read",
        "pipeline",
    ),
    Fact(
        "pipeline.shapes_seen",
        "",
        "the distinct shapes of the batches read (at most three)",
        "pipeline",
        "list",
    ),
    Fact(
        "pipeline.workers",
        "",
        "loading workers of a PyDataset (workers) or a torch DataLoader (num_workers)",
        "pipeline",
    ),
    Fact(
        "pipeline.generator_source",
        "",
        "the tf.data source is a Python generator (from_generator)",
        "pipeline",
        "bool",
    ),
    Fact(
        "pipeline.prefetch_injected",
        "",
        "no explicit prefetch at the end, but TF injects one (inject_prefetch with autotuning on)",
        "pipeline",
        "bool",
    ),
    Fact("storage.total_bytes", "bytes", "total size of the local data files", "storage"),
    Fact(
        "storage.remote_files",
        "",
        "data paths on remote storage (s3://, gs://...), not measured locally",
        "storage",
    ),
    Fact(
        "storage.unreadable",
        "",
        "data files that are missing or cannot be read, with the reason",
        "storage",
        "list",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    """Facts of the chief's last ``pipeline`` record (see ``advisor.analysis.pipeline_advice``)."""
    from advisor.analysis.pipeline_advice import pipeline_facts
    from advisor.store.schema import PipelineRecord

    record = run.chief_last(PipelineRecord)
    return pipeline_facts(record.values) if record is not None else {}
