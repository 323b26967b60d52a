"""Input candidates of the what-if: tf.data changes, PyDataset workers, DataLoader workers.

tf.data changes are made on a rebuilt copy of the user's pipeline (``feeds.rewrite``): maps and
interleaves made parallel with AUTOTUNE, a prefetch added at the end, a cache after the stage that
reads (or generates) the data or after the last deterministic map (``caches.py``), and
parallelism switched on through ``tf.data.Options``.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from advisor.experiments.whatif.caches import (
    cache,
    cache_relevant,
    deterministic_map,
    reading_stage,
)
from advisor.experiments.whatif.edits import (
    input_reason,
    need_tfdata,
    rebuilt,
    stage_label,
    variant,
)
from advisor.experiments.whatif.trials import Candidate, NotApplicable, Situation, Trial

AUTOTUNE_TEXT = "num_parallel_calls=tf.data.AUTOTUNE"
WORKER_TIMEOUT_S = 20.0  # a DataLoader worker's batch that takes longer fails the candidate


# -- parallel map / interleave ----------------------------------------------------------------


_REWRITABLE_OPS = {
    "map": ("MapDataset", "ParallelMapDatasetV2"),
    "interleave": ("InterleaveDataset", "ParallelInterleaveDatasetV4"),
}


def _sequential(s: Situation, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """Main-chain stages of these kinds that run one element at a time (no parallel calls, or
    one)."""
    return [
        st
        for st in s.stages
        if st.get("kind") in kinds
        and not st.get("parallel")
        and st.get("op") in _REWRITABLE_OPS.get(st["kind"], ())
    ]


def _parallel_map_relevant(s: Situation) -> str | None:
    reason = need_tfdata(s)
    if reason is None and not _sequential(s, ("map",)):
        reason = "every map already runs in parallel"
    return reason or input_reason(s)


def _parallel_map(s: Situation) -> Trial:
    if (reason := need_tfdata(s)) is not None:
        raise NotApplicable(reason)
    from advisor.experiments.feeds.rewrite import parallel_maps

    stages = _sequential(s, ("map",))
    if not stages:
        raise NotApplicable("the pipeline has no sequential map")
    dataset = rebuilt(s, parallel_maps({st["node"] for st in stages}))
    return variant(
        s,
        "parallel_map",
        f"{', '.join(stage_label(st) for st in stages)} with {AUTOTUNE_TEXT}",
        dataset,
    )


def _parallel_interleave_relevant(s: Situation) -> str | None:
    reason = need_tfdata(s)
    if reason is None and not _sequential(s, ("interleave",)):
        reason = "the pipeline has no sequential interleave"
    return reason or input_reason(s)


def _parallel_interleave(s: Situation) -> Trial:
    if (reason := need_tfdata(s)) is not None:
        raise NotApplicable(reason)
    from advisor.experiments.feeds.rewrite import parallel_interleaves

    stages = _sequential(s, ("interleave",))
    if not stages:
        raise NotApplicable("the pipeline has no sequential interleave")
    dataset = rebuilt(s, parallel_interleaves({st["node"] for st in stages}))
    return variant(
        s,
        "parallel_interleave",
        f"{', '.join(stage_label(st) for st in stages)} with {AUTOTUNE_TEXT}",
        dataset,
    )


# -- prefetch, options ------------------------------------------------------------------------


def _prefetch_relevant(s: Situation) -> str | None:
    reason = need_tfdata(s)
    if reason is None and s.stages and s.stages[-1].get("kind") == "prefetch":
        reason = "the pipeline already ends with a prefetch"
    return reason or input_reason(s)


def _prefetch(s: Situation) -> Trial:
    if s.kind != "tf.data" or s.dataset is None:
        raise NotApplicable(f"the input is {s.kind}, not a tf.data pipeline")
    import tensorflow as tf

    return variant(
        s,
        "prefetch",
        "ds.prefetch(tf.data.AUTOTUNE) as the last stage",
        s.dataset.prefetch(tf.data.AUTOTUNE),
    )


def _options_relevant(s: Situation) -> str | None:
    reason = need_tfdata(s)
    if reason is None:
        options = (s.summary or {}).get("options") or {}
        sequential = _sequential(s, ("map",)) or any(
            st.get("kind") == "batch" and not st.get("parallel") for st in s.stages
        )
        if not sequential and options.get("autotune") is not False:
            reason = "maps and batching already run in parallel and autotuning is on"
    return reason or input_reason(s)


def _options(s: Situation) -> Trial:
    if s.kind != "tf.data" or s.dataset is None:
        raise NotApplicable(f"the input is {s.kind}, not a tf.data pipeline")
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = True
    options.experimental_optimization.map_parallelization = True
    options.experimental_optimization.parallel_batch = True
    label = (
        "tf.data.Options(): autotune.enabled, experimental_optimization.map_parallelization "
        "and .parallel_batch = True"
    )
    return variant(s, "tfdata_options", label, s.dataset.with_options(options))


# -- Python inputs ----------------------------------------------------------------------------


def _workers(s: Situation) -> int:
    return max(2, min(8, s.cpu_count))


def _pydataset_relevant(multiprocessing: bool) -> Any:
    def relevant(s: Situation) -> str | None:
        if s.kind != "pydataset" or s.py_dataset is None:
            return f"the input is {s.kind}, not a keras.utils.PyDataset"
        if multiprocessing and getattr(s.py_dataset, "use_multiprocessing", False):
            return "the PyDataset already uses worker processes"
        if not multiprocessing and (getattr(s.py_dataset, "workers", 1) or 1) > 1:
            return "the PyDataset already has several workers"
        return input_reason(s)

    return relevant


def _pydataset(multiprocessing: bool) -> Any:
    def build(s: Situation) -> Trial:
        if s.kind != "pydataset" or s.py_dataset is None:
            raise NotApplicable(f"the input is {s.kind}, not a keras.utils.PyDataset")
        workers = _workers(s)
        name = "pydataset_multiprocessing" if multiprocessing else "pydataset_workers"
        label = (
            f"PyDataset(workers={workers}{', use_multiprocessing=True' if multiprocessing else ''})"
        )
        if s.flavor == "tf_keras":  # a tf_keras Sequence takes its workers from fit
            trial = variant(s, name, label, s.py_dataset)
            trial.kwargs.update(workers=workers, use_multiprocessing=multiprocessing)
            return trial
        changed = copy.copy(s.py_dataset)
        try:
            changed.workers = workers
            changed.use_multiprocessing = multiprocessing
        except Exception as exc:  # noqa: BLE001 — a PyDataset that refuses new settings
            raise NotApplicable(
                f"cannot set workers on this PyDataset: {type(exc).__name__}: {exc}"
            ) from None
        return variant(s, name, label, changed)

    return build


def _torch_relevant(s: Situation) -> str | None:
    if s.kind != "torch" or s.loader is None:
        return f"the input is {s.kind}, not a torch DataLoader"
    if (getattr(s.loader, "num_workers", 0) or 0) > 0:
        return "the DataLoader already has worker processes"
    return input_reason(s)


def _torch_workers(s: Situation) -> Trial:
    if s.kind != "torch" or s.loader is None:
        raise NotApplicable(f"the input is {s.kind}, not a torch DataLoader")
    from torch.utils.data import DataLoader, IterableDataset

    loader = s.loader
    if isinstance(loader.dataset, IterableDataset):
        raise NotApplicable(
            "an IterableDataset must shard itself across workers (get_worker_info): "
            "the what-if cannot add workers to it safely"
        )
    workers = _workers(s)
    changed = DataLoader(
        loader.dataset,
        batch_sampler=loader.batch_sampler,
        collate_fn=loader.collate_fn,
        num_workers=workers,
        pin_memory=loader.pin_memory,
        worker_init_fn=loader.worker_init_fn,
        timeout=loader.timeout or WORKER_TIMEOUT_S,
        multiprocessing_context=loader.multiprocessing_context,
    )
    # Not persistent: segments end mid-epoch, and a persistent pool's resume after an abandoned
    # epoch was seen to wait forever; the timeout turns any other stuck worker into a failed
    # candidate instead of a hung job.
    trial = variant(s, "torch_workers", f"DataLoader(num_workers={workers})", changed)
    trial.close = lambda: trial.kwargs.clear()  # the loader and its worker processes go
    return trial


# -- the ceiling: the input served from memory ---------------------------------------------------

CACHED_INPUT_LABEL = "the first batch served from memory: the input's whole cost taken away"


def _cached_input_relevant(s: Situation) -> str | None:
    if s.input_cost is None:
        return (
            "no baseline measured the input's cost: with one (baseline='end', or the default "
            "'auto' on fits of ~10 s or more) \"auto\" measures this ceiling when the input "
            "costs time"
        )
    if not s.input_cost_outside_band:
        return (
            "the baseline measured no input cost beyond its noise band: there is nothing to bound"
        )
    return None


def _cached_input(s: Situation) -> Trial:
    """The model trained on one batch from memory, as the baseline's cached arm, measured in the
    what-if's longer rounds: the ceiling of every input change (C404 and S301 show it for fixes
    that cannot be tried here). Its epochs are as long as the input's, so both pay Keras's
    per-epoch cost alike; the input's own restart is part of what it takes away."""
    from advisor.experiments.feeds.base import InputError
    from advisor.experiments.feeds.python import array_feeds, pydataset_feeds, torch_feeds
    from advisor.experiments.feeds.tfdata import tfdata_feeds

    base = s.unchanged
    try:
        if s.kind == "tf.data" and s.dataset is not None:
            feeds = tfdata_feeds(s.dataset, s.backend)
        elif s.kind == "numpy":
            args = base.kwargs
            feeds = array_feeds(
                args.get("x"),
                args.get("y"),
                args.get("sample_weight"),
                base.batch_size,
                False,
                s.backend,
            )
        elif s.kind == "pydataset" and s.py_dataset is not None:
            feeds = pydataset_feeds(s.py_dataset, s.backend)
        elif s.kind == "torch" and s.loader is not None:
            feeds = torch_feeds(s.loader, s.backend)
        else:
            raise NotApplicable(
                f"the input is {s.kind}: its first batch cannot be served from memory here"
            )
    except InputError as exc:
        raise NotApplicable(str(exc)) from None
    return Trial(
        "cached_input",
        CACHED_INPUT_LABEL,
        s.model,
        dict(feeds.cached),
        finite=False,
        batch_size=feeds.batch_size,
        epoch_steps=base.epoch_length or base.epoch_steps,
        spe=base.spe,
    )


CANDIDATES = (
    Candidate("parallel_map", "input", _parallel_map, _parallel_map_relevant),
    Candidate("parallel_interleave", "input", _parallel_interleave, _parallel_interleave_relevant),
    Candidate("prefetch", "input", _prefetch, _prefetch_relevant),
    Candidate(
        "cache_source",
        "input",
        cache("cache_source", reading_stage, "stage that reads files or runs a Python source"),
        cache_relevant(reading_stage, "reading stage"),
    ),
    Candidate(
        "cache_map",
        "input",
        cache("cache_map", deterministic_map, "deterministic map"),
        cache_relevant(deterministic_map, "deterministic map"),
    ),
    Candidate("tfdata_options", "input", _options, _options_relevant),
    Candidate("pydataset_workers", "input", _pydataset(False), _pydataset_relevant(False)),
    Candidate("pydataset_multiprocessing", "input", _pydataset(True), _pydataset_relevant(True)),
    Candidate("torch_workers", "input", _torch_workers, _torch_relevant),
    Candidate(
        "cached_input", "input", _cached_input, _cached_input_relevant
    ),  # a ceiling, not a fix
)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
