"""The cache candidates: ``.cache()`` after the stage that reads (or generates) the data, or after
the last deterministic map, filled once before the rounds — as the first epoch of a run with the
cache would fill it — so that its gain is the steady state of the later epochs. An epoch too long
to fill within the allowance is measured on a cached, repeated prefix of it."""

from __future__ import annotations

import time
from typing import Any

from advisor.experiments.feeds.base import INFINITE
from advisor.experiments.whatif.edits import (
    input_reason,
    need_tfdata,
    rebuilt,
    stage_label,
    variant,
)
from advisor.experiments.whatif.trials import NotApplicable, Situation, Trial

MAX_CACHE_BATCHES = 256  # an endless pipeline's cache holds at most this many batches


def reading_stage(s: Situation) -> dict[str, Any] | None:
    """The last stage that reads files or runs a Python source, with no cache after it."""
    found = None
    for stage in s.stages:
        if (
            stage.get("reads_files")
            or stage.get("python_source")
            or stage.get("kind") == "generator"
        ):
            found = stage
        elif stage.get("kind") == "cache":
            found = None
    return found


def deterministic_map(s: Situation) -> dict[str, Any] | None:
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


def cache_relevant(pick: Any, what: str) -> Any:
    def relevant(s: Situation) -> str | None:
        reason = need_tfdata(s)
        stage = pick(s) if reason is None else None
        if reason is None and stage is None:
            reason = f"the pipeline has no {what} without a cache after it"
        elif (
            stage is not None
            and stage.get("kind") == "map"
            and not s.input_costs
            and not (
                stage.get("py_function") or stage.get("heavy") or (stage.get("fn_ops") or 0) >= 20
            )
        ):
            # A map that looks cheap is judged by its graph only while no input cost was
            # measured: a measured cost beyond its band may lie anywhere up to it (windowing,
            # interleaving, the source), and the cache takes it all away.
            reason = f"{stage_label(stage)} is cheap: caching after it would save little"
        return reason or input_reason(s)

    return relevant


def cache(name: str, pick: Any, what: str) -> Any:
    def build(s: Situation) -> Trial:
        if (reason := need_tfdata(s)) is not None:
            raise NotApplicable(reason)
        from advisor.experiments.feeds.rewrite import cache_after
        from advisor.experiments.feeds.tfdata import cardinality, shared_puller

        stage = pick(s)
        if stage is None:
            raise NotApplicable(f"the pipeline has no {what} without a cache after it")
        card = cardinality(s.dataset)
        # a batch into the cache costs what the input takes for it, at least (the baseline's
        # rate: the what-if's few calibration steps read batches prefetched during training)
        step = max(s.step_seconds or 0.0, s.input_batch_seconds or 0.0)
        # The whole epoch, as `.cache()` would hold it (its length from the pipeline, else as seen
        # in training); an endless pipeline, or an epoch that would not fill within the time a fill
        # may take, is cached on a prefix that is repeated, so the cached steady state is measured.
        epoch = (
            card
            if card != INFINITE and card > 0
            else (s.unchanged.epoch_length if card != INFINITE else None)
        )
        batches = max(8, min(MAX_CACHE_BATCHES, int(s.fill_seconds / step) if step > 0 else 8))
        whole = epoch is not None and (batches >= epoch or epoch * step <= s.fill_seconds)
        if whole:
            assert epoch is not None
            elements, batches = None, epoch
        else:
            later = s.stages[s.stages.index(stage) + 1 :]
            elements = (
                batches * s.batch_size
                if any(st.get("kind") == "batch" for st in later)
                else batches
            )
        dataset = rebuilt(s, cache_after(stage["node"], elements))
        puller = shared_puller()

        def fill(deadline: float, stop: Any) -> None:
            _fill(puller, dataset, batches + 1, deadline, stop, step)

        where = stage_label(stage)
        if any(st.get("kind") == "shuffle" for st in s.stages[: s.stages.index(stage)]):
            where += ", placed before the shuffle in your code"
        if whole or epoch is None:
            return variant(
                s,
                name,
                f"ds.cache() after {where} (filled once, as the first epoch would)",
                dataset,
                fill=fill,
                fill_estimate=batches * step,
            )
        base = s.unchanged
        label = (
            f"ds.cache() after {where} (measured on the first {batches} of {epoch} batches of an "
            "epoch, cached and repeated: a whole epoch would not fill within the allowance)"
        )
        return Trial(
            name,
            label,
            s.model,
            {**base.kwargs, "x": dataset},
            finite=False,
            batch_size=base.batch_size,
            epoch_steps=epoch,
            spe=base.spe,
            fill=fill,
            fill_estimate=batches * step,
        )

    return build


def _fill(
    puller: Any, dataset: Any, batches: int, deadline: float, stop: Any, expected: float = 0.0
) -> None:
    """Read ``batches`` batches of one iterator in growing chunks (the cache completes when its
    pass ends); NotApplicable when the deadline comes first; it returns early when ``stop()``.
    A chunk is sized at the slowest rate seen (or ``expected`` seconds a batch), so that it
    ends before the deadline: the pipeline's first batches, read ahead, come faster."""
    import tensorflow as tf

    iterator = iter(dataset)
    done, chunk, slowest = 0, 1, expected
    try:
        while done < batches and not stop():
            if time.perf_counter() >= deadline:
                raise NotApplicable(
                    "filling the cache took longer than the time left "
                    f"({done} of {batches} batches)"
                )
            t0 = time.perf_counter()
            count = min(chunk, batches - done)
            puller.pull(iterator, count)
            done += count
            if done > count:  # the first chunk starts the pipeline (and may trace the loop)
                slowest = max(slowest, (time.perf_counter() - t0) / count)
            room = max(0.0, deadline - time.perf_counter())
            if done < batches and slowest > 0 and (batches - done) * slowest > 2 * room:
                raise NotApplicable(  # said now: the time left goes to the other candidates
                    f"filling the cache takes ~{slowest:.2f} s a batch: the {batches - done} "
                    f"batches left would not fill in the {room:.1f} s left ({done} filled)"
                )
            chunk = max(1, min(2 * chunk, int(room / slowest) if slowest > 0 else 2 * chunk))
    except tf.errors.OutOfRangeError:
        return
