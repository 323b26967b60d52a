"""From a pipeline summary (``advisor.probes.tfdata``) to ``pipeline.*`` facts and advice.

Pure functions over the JSON stored in a ``pipeline`` record: no TensorFlow, no I/O. The advice is
data — each change with the stage it applies to ("map #2 ('decode')"), most valuable first; the
words are the rules' (``rules/phrases/pipeline.yaml``), rendered by
:mod:`advisor.diagnosis.phrases`.
"""

from __future__ import annotations

from typing import Any

AUTOTUNE = -1
_SOURCE_NAMES = {
    "TensorSliceDataset": "from_tensor_slices",
    "TensorDataset": "from_tensors",
    "RangeDataset": "range",
    "TFRecordDatasetV2": "TFRecordDataset",
    "TextLineDataset": "TextLineDataset",
    "FixedLengthRecordDatasetV2": "FixedLengthRecordDataset",
}


def stage_label(stage: dict[str, Any]) -> str:
    """``map #2 ('decode')`` — how advice names a stage."""
    kind = stage.get("kind", "stage")
    name = kind.replace("_", " ") if kind not in ("flat_map",) else "flat_map"
    if "ordinal" in stage:
        name = f"{name} #{stage['ordinal']}"
    fn = stage.get("fn")
    return f"{name} ('{fn}')" if fn else name


def stage_summary(stage: dict[str, Any]) -> str:
    """One short line per stage for the ``pipeline.stages`` fact."""
    kind = stage.get("kind")
    op = stage.get("op", "")
    if kind == "source":
        text = _SOURCE_NAMES.get(op, op.replace("Dataset", "") or "source")
        return text + (" (files)" if stage.get("is_files") else "")
    if kind in ("options", "passive"):
        return op.replace("Dataset", "").lower() or "options"
    text = kind or op
    if stage.get("fn"):
        text += f" '{stage['fn']}'"
    notes: list[str] = []
    if kind in ("batch", "prefetch", "shuffle"):
        size = stage.get("batch_size" if kind == "batch" else "buffer_size")
        if isinstance(size, int):
            text += "(AUTOTUNE)" if size == AUTOTUNE else f"({size})"
    npc = stage.get("num_parallel_calls")
    if kind in ("map", "interleave") or (kind == "batch" and stage.get("parallel")):
        if stage.get("parallel"):
            notes.append("parallel=AUTOTUNE" if npc == AUTOTUNE else f"parallel={npc}")
        elif kind != "batch":
            notes.append("sequential")
    if kind == "flat_map" and stage.get("reads_files"):
        notes.append("sequential")
    if stage.get("py_function"):
        notes.append("py_function")
    if stage.get("random") and kind != "shuffle":
        notes.append("random")
    if stage.get("reads_files"):
        notes.append("reads files")
    if kind == "cache" and stage.get("to_file"):
        notes.append("file")
    return text + (f" [{', '.join(notes)}]" if notes else "")


def _meaningful(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in stages if s.get("kind") not in ("options", "passive")]


def pipeline_facts(values: dict[str, Any]) -> dict[str, Any]:
    """``pipeline.*`` and ``storage.*`` facts from a pipeline record's values."""
    out: dict[str, Any] = {}
    kind = values.get("input_kind")
    if kind:
        out["pipeline.input_kind"] = kind
    if isinstance(values.get("dynamic_dims"), int):
        out["pipeline.dynamic_dims"] = values["dynamic_dims"]
    summary = values.get("summary")
    if isinstance(summary, dict) and isinstance(summary.get("stages"), list):
        out.update(_tfdata_facts(summary))
    elif kind in ("generator", "pydataset", "torch"):
        settings = values.get("pydataset") or values.get("dataloader") or {}
        out["pipeline.advice"] = python_input_changes(kind, settings)
        workers = settings.get("workers", settings.get("num_workers"))
        if isinstance(workers, int):
            out["pipeline.workers"] = workers
    shapes = values.get("shapes_seen")
    if isinstance(shapes, list) and shapes and all(isinstance(b, list) for b in shapes):
        out.update(seen_shape_facts(shapes))
    if kind == "numpy":  # arrays in memory: the pipeline reads no files
        out["pipeline.file_source"] = False
    storage = values.get("storage")
    if isinstance(storage, dict):
        out.update(_storage_facts(storage))
    return out


def seen_shape_facts(batches: list[list[Any]]) -> dict[str, Any]:
    """From the shapes of the first batches read (per batch, per component): how many
    dimensions beyond the batch axis changed size among them, and the distinct shapes."""
    varying = 0
    components = max(len(b) for b in batches)
    for c in range(components):
        shapes = [tuple(b[c]) if c < len(b) and isinstance(b[c], list) else None for b in batches]
        ranks = {len(x) for x in shapes if x is not None}
        if None in shapes or len(ranks) > 1:
            varying += max(1, max(ranks, default=1) - 1)
            continue
        for d in range(1, ranks.pop() if ranks else 0):
            sizes = {x[d] for x in shapes if x is not None}
            varying += 1 if len(sizes) > 1 or None in sizes else 0
    distinct = list(dict.fromkeys(" + ".join(_shape_text(c) for c in b) for b in batches))
    return {
        "pipeline.batches_seen": len(batches),
        "pipeline.varying_dims": varying,
        "pipeline.shapes_seen": distinct[:3],
    }


def _shape_text(shape: Any) -> str:
    if not isinstance(shape, list):
        return "?"
    dims = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def _tfdata_facts(summary: dict[str, Any]) -> dict[str, Any]:
    stages: list[dict[str, Any]] = summary["stages"]
    real = _meaningful(stages)
    maps = [s for s in real if s.get("kind") == "map"]
    interleaves = [s for s in real if s.get("kind") == "interleave"]
    prefetches = [s for s in real if s.get("kind") == "prefetch"]
    caches = [s for s in real if s.get("kind") == "cache"]
    options = summary.get("options") or {}
    out: dict[str, Any] = {
        "pipeline.inspected": True,
        "pipeline.prefetch": bool(prefetches),
        "pipeline.prefetch_at_end": bool(real) and real[-1].get("kind") == "prefetch",
        "pipeline.maps": len(maps),
        "pipeline.sequential_maps": sum(1 for s in maps if not s.get("parallel")),
        "pipeline.random_maps": sum(1 for s in maps if s.get("random")),
        "pipeline.sequential_interleaves": sum(1 for s in interleaves if not s.get("parallel"))
        + sum(1 for s in real if s.get("kind") == "flat_map" and s.get("reads_files")),
        "pipeline.fixed_parallelism": sum(
            1
            for s in real
            if s.get("parallel")
            and isinstance(s.get("num_parallel_calls"), int)
            and s["num_parallel_calls"] > 1
            and s.get("kind") in ("map", "interleave", "batch", "filter")
        ),
        "pipeline.py_function": any(s.get("py_function") for s in real),
        "pipeline.generator_source": any(s.get("python_source") for s in real),
        "pipeline.prefetch_injected": prefetch_injected(summary),
        "pipeline.cache": bool(caches),
        "pipeline.cache_after_random": bool(_cache_after_random(real)),
        "pipeline.uncached_deterministic_map": bool(_offline_candidates(real)),
        "pipeline.autotune_disabled": bool(_disabling_options(options)),
        "pipeline.file_source": any(s.get("reads_files") or s.get("is_files") for s in real),
        "pipeline.stages": [stage_summary(s) for s in stages],
    }
    out["pipeline.advice"] = tfdata_changes(summary)
    return out


def prefetch_injected(summary: dict[str, Any]) -> bool:
    """TF adds a prefetch after a synchronous last stage by itself (the ``inject_prefetch``
    optimization, on by default while autotuning and default optimizations are on)."""
    stages = _meaningful(summary.get("stages") or [])
    if not stages or stages[-1].get("kind") == "prefetch":
        return False
    options = summary.get("options") or {}
    return (
        options.get("autotune") is not False
        and options.get("inject_prefetch") is not False
        and options.get("apply_default_optimizations") is not False
    )


def _cache_after_random(
    stages: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The first (random stage, cache after it) pair, or None."""
    first_random: dict[str, Any] | None = None
    for stage in stages:
        if stage.get("random") and first_random is None:
            first_random = stage
        if stage.get("kind") == "cache" and first_random is not None:
            return first_random, stage
    return None


def _offline_candidates(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deterministic, costly maps recomputed every epoch (no cache after them, nothing random
    before)."""
    found = []
    random_seen = False
    for index, stage in enumerate(stages):
        if stage.get("kind") == "map" and stage.get("random"):
            random_seen = True
        if stage.get("kind") != "map" or stage.get("random") or random_seen:
            continue
        costly = stage.get("py_function") or stage.get("heavy") or (stage.get("fn_ops") or 0) >= 20
        cached_later = any(s.get("kind") == "cache" for s in stages[index + 1 :])
        if costly and not cached_later:
            found.append(stage)
    return found


def _disabling_options(options: dict[str, Any]) -> list[str]:
    changes = []
    if options.get("autotune") is False:
        changes.append("options.autotune.enabled = False")
    if options.get("max_intra_op_parallelism") == 1:
        changes.append("options.threading.max_intra_op_parallelism = 1")
    if options.get("private_threadpool_size") == 1:
        changes.append("options.threading.private_threadpool_size = 1")
    if options.get("map_parallelization") is False:
        changes.append("options.experimental_optimization.map_parallelization = False")
    return changes


def tfdata_changes(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The concrete changes for this pipeline, most valuable first, as data.

    Each item is ``{"change": code, ...}`` with the stage labels it needs; the rules' phrasebook
    (``rules/phrases/pipeline.yaml``) says each one in words. An empty list: nothing to change.
    """
    stages = _meaningful(summary.get("stages") or [])
    items: list[dict[str, Any]] = []
    for stage in stages:
        if stage.get("kind") == "generator":
            items.append({"change": "generator_source"})
    for stage in stages:
        if stage.get("kind") == "flat_map" and stage.get("reads_files"):
            items.append(
                {
                    "change": "parallel_reads",
                    "stage": stage_label(stage),
                    "reader": stage.get("reader") or "the file reader",
                }
            )
        elif stage.get("kind") == "interleave" and not stage.get("parallel"):
            items.append({"change": "parallel_calls", "stage": stage_label(stage)})
    for stage in stages:
        if stage.get("kind") == "map" and not stage.get("parallel"):
            items.append({"change": "parallel_calls", "stage": stage_label(stage)})
    for stage in stages:
        if stage.get("kind") == "map" and stage.get("py_function"):
            items.append({"change": "py_function", "stage": stage_label(stage)})
    for stage in stages:
        npc = stage.get("num_parallel_calls")
        if (
            stage.get("parallel")
            and isinstance(npc, int)
            and npc > 1
            and stage.get("kind") in ("map", "interleave")
        ):
            items.append({"change": "autotune_calls", "stage": stage_label(stage), "calls": npc})
    if prefetch_injected(summary):
        # TF prefetches after the last stage already: an explicit prefetch would not speed it up
        pass
    elif stages and not any(s.get("kind") == "prefetch" for s in stages):
        items.append({"change": "add_prefetch"})
    elif stages and stages[-1].get("kind") != "prefetch":
        items.append({"change": "move_prefetch", "after": stage_label(stages[-1])})
    pair = _cache_after_random(stages)
    if pair is not None:
        random_stage, cache = pair
        what = (
            ".shuffle()"
            if random_stage.get("kind") == "shuffle"
            else f"the random {stage_label(random_stage)}"
        )
        items.append({"change": "cache_before_random", "random": what, "cache": stage_label(cache)})
    for stage in _offline_candidates(stages):
        shuffled_before = any(s.get("kind") == "shuffle" for s in stages[: stages.index(stage)])
        items.append(
            {
                "change": "cache_shuffled" if shuffled_before else "cache_deterministic",
                "stage": stage_label(stage),
            }
        )
    for change in _disabling_options(summary.get("options") or {}):
        items.append({"change": "remove_option", "option": change})
    unique: dict[str, dict[str, Any]] = {repr(sorted(i.items())): i for i in reversed(items)}
    return list(reversed(unique.values()))


def python_input_changes(kind: str, pydataset: dict[str, Any]) -> list[dict[str, Any]]:
    """Changes for inputs that are not tf.data (Python generators, keras.utils.PyDataset)."""
    if kind == "generator":
        return [{"change": "generator_to_pydataset"}]
    if kind == "pydataset":
        workers = pydataset.get("workers")
        if isinstance(workers, int) and workers <= 1:
            return [{"change": "pydataset_workers"}]
        if not pydataset.get("use_multiprocessing"):
            return [{"change": "pydataset_processes"}]
    if kind == "torch" and pydataset.get("num_workers") == 0:
        return [{"change": "dataloader_workers"}]
    return []


def _storage_facts(storage: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(storage.get("files"), int):
        out["storage.files"] = storage["files"]
        for q in ("p10", "p50", "p90"):
            if storage.get(f"bytes_{q}") is not None:
                out[f"storage.file_bytes.{q}"] = storage[f"bytes_{q}"]
        if storage.get("total_bytes") is not None:
            out["storage.total_bytes"] = storage["total_bytes"]
    if storage.get("compression"):
        out["storage.compression"] = storage["compression"]
    if storage.get("remote"):
        out["storage.remote_files"] = storage["remote"]
    problems = list(storage.get("missing") or []) + list(storage.get("unreadable") or [])
    if problems:
        out["storage.unreadable"] = problems
    return out
