"""Input candidates of the what-if: tf.data changes, PyDataset workers, DataLoader workers.

tf.data changes are made on a rebuilt copy of the user's pipeline (``feeds.rewrite``): maps and
interleaves made parallel with AUTOTUNE, a prefetch added at the end, a cache after the stage that
reads (or generates) the data or after the last deterministic map, and parallelism switched on
through ``tf.data.Options``. A cache is filled once before the rounds — as the first epoch of a
run with the cache would fill it — so that its gain is the steady state of the later epochs.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

from advisor.experiments.feeds.base import INFINITE
from advisor.experiments.whatif.trials import Candidate, NotApplicable, Situation, Trial

MAX_CACHE_BATCHES = 256  # an endless pipeline's cache holds at most this many batches
AUTOTUNE_TEXT = "num_parallel_calls=tf.data.AUTOTUNE"
WORKER_TIMEOUT_S = 20.0  # a DataLoader worker's batch that takes longer fails the candidate


def _label(stage: dict[str, Any]) -> str:
    """``map #1 ('decode')``: how the advice names a stage."""
    name = str(stage.get("kind", "stage")).replace("_", " ")
    if "ordinal" in stage:
        name = f"{name} #{stage['ordinal']}"
    return f"{name} ('{stage['fn']}')" if stage.get("fn") else name


def _need_tfdata(s: Situation) -> str | None:
    if s.kind != "tf.data" or s.dataset is None:
        return f"the input is {s.kind}, not a tf.data pipeline"
    if s.summary is None:
        return "the tf.data graph was not inspected (pipeline=True inspects it)"
    return None


def _input_reason(s: Situation) -> str | None:
    """Why an input change is left out of "auto" although it applies: no input cost measured."""
    if s.input_free:
        return "the baseline measured no input cost beyond its noise band: an input change cannot gain"
    return None


def _variant(s: Situation, name: str, label: str, dataset: Any, **extra: Any) -> Trial:
    base = s.unchanged
    return Trial(name, label, s.model, {**base.kwargs, "x": dataset}, finite=base.finite, batch_size=base.batch_size,
                 epoch_steps=base.epoch_steps, spe=base.spe, epoch_length=base.epoch_length, **extra)


def _rebuilt(s: Situation, edit: Any) -> Any:
    from advisor.experiments.feeds.rewrite import RewriteError, rebuild

    try:
        dataset = rebuild(s.dataset, edit)
    except RewriteError as exc:
        raise NotApplicable(str(exc)) from None
    if dataset is None:
        raise NotApplicable("the pipeline graph has no stage to change")
    return dataset


# -- parallel map / interleave ----------------------------------------------------------------


_REWRITABLE_OPS = {"map": ("MapDataset", "ParallelMapDatasetV2"),
                   "interleave": ("InterleaveDataset", "ParallelInterleaveDatasetV4")}


def _sequential(s: Situation, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """Main-chain stages of these kinds that run one element at a time (no parallel calls, or one)."""
    return [st for st in s.stages if st.get("kind") in kinds and not st.get("parallel")
            and st.get("op") in _REWRITABLE_OPS.get(st["kind"], ())]


def _parallel_map_relevant(s: Situation) -> str | None:
    reason = _need_tfdata(s)
    if reason is None and not _sequential(s, ("map",)):
        reason = "every map already runs in parallel"
    return reason or _input_reason(s)


def _parallel_map(s: Situation) -> Trial:
    if (reason := _need_tfdata(s)) is not None:
        raise NotApplicable(reason)
    from advisor.experiments.feeds.rewrite import parallel_maps

    stages = _sequential(s, ("map",))
    if not stages:
        raise NotApplicable("the pipeline has no sequential map")
    dataset = _rebuilt(s, parallel_maps({st["node"] for st in stages}))
    return _variant(s, "parallel_map", f"{', '.join(_label(st) for st in stages)} with {AUTOTUNE_TEXT}", dataset)


def _parallel_interleave_relevant(s: Situation) -> str | None:
    reason = _need_tfdata(s)
    if reason is None and not _sequential(s, ("interleave",)):
        reason = "the pipeline has no sequential interleave"
    return reason or _input_reason(s)


def _parallel_interleave(s: Situation) -> Trial:
    if (reason := _need_tfdata(s)) is not None:
        raise NotApplicable(reason)
    from advisor.experiments.feeds.rewrite import parallel_interleaves

    stages = _sequential(s, ("interleave",))
    if not stages:
        raise NotApplicable("the pipeline has no sequential interleave")
    dataset = _rebuilt(s, parallel_interleaves({st["node"] for st in stages}))
    return _variant(s, "parallel_interleave", f"{', '.join(_label(st) for st in stages)} with {AUTOTUNE_TEXT}",
                    dataset)


# -- prefetch, options ------------------------------------------------------------------------


def _prefetch_relevant(s: Situation) -> str | None:
    reason = _need_tfdata(s)
    if reason is None and s.stages and s.stages[-1].get("kind") == "prefetch":
        reason = "the pipeline already ends with a prefetch"
    return reason or _input_reason(s)


def _prefetch(s: Situation) -> Trial:
    if s.kind != "tf.data" or s.dataset is None:
        raise NotApplicable(f"the input is {s.kind}, not a tf.data pipeline")
    import tensorflow as tf

    return _variant(s, "prefetch", "ds.prefetch(tf.data.AUTOTUNE) as the last stage", s.dataset.prefetch(tf.data.AUTOTUNE))


def _options_relevant(s: Situation) -> str | None:
    reason = _need_tfdata(s)
    if reason is None:
        options = (s.summary or {}).get("options") or {}
        sequential = _sequential(s, ("map",)) or any(
            st.get("kind") == "batch" and not st.get("parallel") for st in s.stages)
        if not sequential and options.get("autotune") is not False:
            reason = "maps and batching already run in parallel and autotuning is on"
    return reason or _input_reason(s)


def _options(s: Situation) -> Trial:
    if s.kind != "tf.data" or s.dataset is None:
        raise NotApplicable(f"the input is {s.kind}, not a tf.data pipeline")
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = True
    options.experimental_optimization.map_parallelization = True
    options.experimental_optimization.parallel_batch = True
    label = ("tf.data.Options(): autotune.enabled, experimental_optimization.map_parallelization "
             "and .parallel_batch = True")
    return _variant(s, "tfdata_options", label, s.dataset.with_options(options))


# -- caches -----------------------------------------------------------------------------------


def _reading_stage(s: Situation) -> dict[str, Any] | None:
    """The last stage that reads files or runs a Python source, with no cache after it."""
    found = None
    for stage in s.stages:
        if stage.get("reads_files") or stage.get("python_source") or stage.get("kind") == "generator":
            found = stage
        elif stage.get("kind") == "cache":
            found = None
    return found


def _deterministic_map(s: Situation) -> dict[str, Any] | None:
    """The last map with nothing random in it or in a map before it, and no cache after it."""
    found = None
    for stage in s.stages:
        if stage.get("kind") == "map":
            if stage.get("random"):
                break
            found = stage
        elif stage.get("kind") == "cache":
            found = None
    return found


def _cache_relevant(pick: Any, what: str) -> Any:
    def relevant(s: Situation) -> str | None:
        reason = _need_tfdata(s)
        stage = pick(s) if reason is None else None
        if reason is None and stage is None:
            reason = f"the pipeline has no {what} without a cache after it"
        elif stage is not None and stage.get("kind") == "map" and not (
                stage.get("py_function") or stage.get("heavy") or (stage.get("fn_ops") or 0) >= 20):
            reason = f"{_label(stage)} is cheap: caching after it would save little"
        return reason or _input_reason(s)

    return relevant


def _cache(name: str, pick: Any, what: str) -> Any:
    def build(s: Situation) -> Trial:
        if (reason := _need_tfdata(s)) is not None:
            raise NotApplicable(reason)
        from advisor.experiments.feeds.rewrite import cache_after
        from advisor.experiments.feeds.tfdata import GraphPuller, cardinality

        stage = pick(s)
        if stage is None:
            raise NotApplicable(f"the pipeline has no {what} without a cache after it")
        card = cardinality(s.dataset)
        step = s.step_seconds or 0.0
        if card != INFINITE and card > 0:
            elements, batches = None, card  # the whole epoch, as `.cache()` would hold it
        elif card != INFINITE and s.unchanged.epoch_length:  # finite, its length seen in training
            elements, batches = None, s.unchanged.epoch_length
        else:
            batches = _prefix_batches(s, step)
            elements = _prefix_elements(s, stage, batches)
        epoch = batches if elements is None else None
        if epoch is not None and step > 0 and epoch * step > s.fill_seconds and _prefix_batches(s, step) < epoch:
            # A whole epoch would not fill within the time a fill may take: a prefix of the epoch
            # is cached and repeated instead, so the cached steady state is still measured.
            batches = _prefix_batches(s, step)
            elements = _prefix_elements(s, stage, batches)
        dataset = _rebuilt(s, cache_after(stage["node"], elements))
        puller = GraphPuller()

        def fill(deadline: float, stop: Any) -> None:
            _fill(puller, dataset, batches + 1, deadline, stop)

        where = _label(stage)
        if any(st.get("kind") == "shuffle" for st in s.stages[:s.stages.index(stage)]):
            where += ", placed before the shuffle in your code"
        if epoch is None or elements is None:
            return _variant(s, name, f"ds.cache() after {where} (filled once, as the first epoch would)",
                            dataset, fill=fill, fill_estimate=batches * step)
        base = s.unchanged
        label = (f"ds.cache() after {where} (measured on the first {batches} of {epoch} batches of an "
                 "epoch, cached and repeated: a whole epoch would not fill within the budget)")
        return Trial(name, label, s.model, {**base.kwargs, "x": dataset}, finite=False, batch_size=base.batch_size,
                     epoch_steps=epoch, spe=base.spe, fill=fill, fill_estimate=batches * step)

    return build


def _prefix_batches(s: Situation, step: float) -> int:
    """How many batches a bounded cache holds: what one fill may read, within [8, MAX_CACHE_BATCHES]."""
    return max(8, min(MAX_CACHE_BATCHES, int(s.fill_seconds / step) if step > 0 else 8))


def _prefix_elements(s: Situation, stage: dict[str, Any], batches: int) -> int:
    """The elements after ``stage`` that make ``batches`` batches (per element if it is batched later)."""
    later = s.stages[s.stages.index(stage) + 1:]
    return batches * s.batch_size if any(st.get("kind") == "batch" for st in later) else batches


def _fill(puller: Any, dataset: Any, batches: int, deadline: float, stop: Any) -> None:
    """Read ``batches`` batches of one iterator in growing chunks (the cache completes when its
    pass ends); NotApplicable when the deadline comes first; it returns early when ``stop()``."""
    import tensorflow as tf

    iterator = iter(dataset)
    done, chunk = 0, 1
    try:
        while done < batches and not stop():
            if time.perf_counter() >= deadline:
                raise NotApplicable(f"filling the cache took longer than the time left ({done} of {batches} batches)")
            t0 = time.perf_counter()
            count = min(chunk, batches - done)
            puller.pull(iterator, count)
            done += count
            per = (time.perf_counter() - t0) / count
            chunk = max(1, min(2 * chunk, int(max(0.0, deadline - time.perf_counter()) / per) if per > 0 else 2 * chunk))
    except tf.errors.OutOfRangeError:
        return


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
        return _input_reason(s)

    return relevant


def _pydataset(multiprocessing: bool) -> Any:
    def build(s: Situation) -> Trial:
        if s.kind != "pydataset" or s.py_dataset is None:
            raise NotApplicable(f"the input is {s.kind}, not a keras.utils.PyDataset")
        workers = _workers(s)
        name = "pydataset_multiprocessing" if multiprocessing else "pydataset_workers"
        label = f"PyDataset(workers={workers}{', use_multiprocessing=True' if multiprocessing else ''})"
        if s.flavor == "tf_keras":  # a tf_keras Sequence takes its workers from fit
            trial = _variant(s, name, label, s.py_dataset)
            trial.kwargs.update(workers=workers, use_multiprocessing=multiprocessing)
            return trial
        variant = copy.copy(s.py_dataset)
        try:
            variant.workers = workers
            variant.use_multiprocessing = multiprocessing
        except Exception as exc:  # noqa: BLE001 — a PyDataset that refuses new settings
            raise NotApplicable(f"cannot set workers on this PyDataset: {type(exc).__name__}: {exc}") from None
        return _variant(s, name, label, variant)

    return build


def _torch_relevant(s: Situation) -> str | None:
    if s.kind != "torch" or s.loader is None:
        return f"the input is {s.kind}, not a torch DataLoader"
    if (getattr(s.loader, "num_workers", 0) or 0) > 0:
        return "the DataLoader already has worker processes"
    return _input_reason(s)


def _torch_workers(s: Situation) -> Trial:
    if s.kind != "torch" or s.loader is None:
        raise NotApplicable(f"the input is {s.kind}, not a torch DataLoader")
    from torch.utils.data import DataLoader, IterableDataset

    loader = s.loader
    if isinstance(loader.dataset, IterableDataset):
        raise NotApplicable("an IterableDataset must shard itself across workers (get_worker_info): "
                            "the what-if cannot add workers to it safely")
    workers = _workers(s)
    variant = DataLoader(loader.dataset, batch_sampler=loader.batch_sampler, collate_fn=loader.collate_fn,
                         num_workers=workers, pin_memory=loader.pin_memory,
                         worker_init_fn=loader.worker_init_fn, timeout=loader.timeout or WORKER_TIMEOUT_S,
                         multiprocessing_context=loader.multiprocessing_context)
    # Not persistent: segments end mid-epoch, and a persistent pool's resume after an abandoned
    # epoch was seen to wait forever; the timeout turns any other stuck worker into a failed
    # candidate instead of a hung job.
    trial = _variant(s, "torch_workers", f"DataLoader(num_workers={workers})", variant)
    trial.close = lambda: trial.kwargs.clear()  # the loader and its worker processes go
    return trial


# -- the ceiling: the input served from memory ---------------------------------------------------

CACHED_INPUT_LABEL = "the first batch served from memory: the input's whole cost taken away"


def _cached_input_relevant(s: Situation) -> str | None:
    if s.input_cost is None:
        return ("no baseline measured the input's cost: with one (baseline='end', or the default 'auto' on fits "
                "of ~10 s or more) \"auto\" measures this ceiling when the input costs time")
    if not s.input_cost_outside_band:
        return "the baseline measured no input cost beyond its noise band: there is nothing to bound"
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
            feeds = array_feeds(args.get("x"), args.get("y"), args.get("sample_weight"), base.batch_size, False,
                                s.backend)
        elif s.kind == "pydataset" and s.py_dataset is not None:
            feeds = pydataset_feeds(s.py_dataset, s.backend)
        elif s.kind == "torch" and s.loader is not None:
            feeds = torch_feeds(s.loader, s.backend)
        else:
            raise NotApplicable(f"the input is {s.kind}: its first batch cannot be served from memory here")
    except InputError as exc:
        raise NotApplicable(str(exc)) from None
    return Trial("cached_input", CACHED_INPUT_LABEL, s.model, dict(feeds.cached), finite=False,
                 batch_size=feeds.batch_size, epoch_steps=base.epoch_length or base.epoch_steps, spe=base.spe)


CANDIDATES = (
    Candidate("parallel_map", "input", _parallel_map, _parallel_map_relevant),
    Candidate("parallel_interleave", "input", _parallel_interleave, _parallel_interleave_relevant),
    Candidate("prefetch", "input", _prefetch, _prefetch_relevant),
    Candidate("cache_source", "input", _cache("cache_source", _reading_stage, "stage that reads files or runs a "
                                              "Python source"), _cache_relevant(_reading_stage, "reading stage")),
    Candidate("cache_map", "input", _cache("cache_map", _deterministic_map, "deterministic map"),
              _cache_relevant(_deterministic_map, "deterministic map")),
    Candidate("tfdata_options", "input", _options, _options_relevant),
    Candidate("pydataset_workers", "input", _pydataset(False), _pydataset_relevant(False)),
    Candidate("pydataset_multiprocessing", "input", _pydataset(True), _pydataset_relevant(True)),
    Candidate("torch_workers", "input", _torch_workers, _torch_relevant),
    Candidate("cached_input", "input", _cached_input, _cached_input_relevant),  # a ceiling, not a fix
)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
