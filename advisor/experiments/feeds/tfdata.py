"""The baseline's feeds for a ``tf.data.Dataset``: cached, real, data-only and source-cached.

The real feed is the user's pipeline, repeated when it is finite (a fresh iterator per
segment; the user's own iterator is never touched). It is a copy rebuilt from the dataset's
GraphDef whose shuffles draw their seeds from a generator of their own: an iterator of the
user's dataset object would advance its shuffle seeds, and the epochs trained after the baseline
(or the next ``fit``) would see another order than without it. Data-only pulls batches in a graph
loop, so that Python does not slow the pipeline down. The source-cached feed is the same pipeline
rebuilt with ``take → cache → repeat`` right after the stage that reads files.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import one_line
from advisor.experiments.feeds.base import (
    INFINITE,
    UNKNOWN,
    Feeds,
    InputError,
)
from advisor.experiments.segments import Segment, chunked_segment
from advisor.probes.batch import leading_dim

MAX_SOURCE_CACHE_BATCHES = 256  # the source cache repeats at most this many batches' elements
# Ops whose last input is the seed generator shared by every iterator of the dataset.
SEEDED_SHUFFLES = ("ShuffleDatasetV3", "ShuffleAndRepeatDatasetV2")
SHARED_ORDER_NOTE = (
    "the baseline iterated the training dataset itself (it could not be copied): the "
    "shuffle order of later epochs differs from a run without the baseline"
)


def first_element(cached: Any) -> Any:
    """The first batch, read through ``ds.take(1).cache().repeat()``; InputError when the input is
    empty or fails. Reading two elements completes the cache, so the pipeline starts only once."""
    try:
        iterator = iter(cached)
        element = next(iterator)
        next(iterator)
        return element
    except StopIteration:
        raise InputError("the input dataset is empty: it yields no batch to measure") from None
    except Exception as exc:  # noqa: BLE001 — a failing pipeline becomes one clear line
        raise InputError(f"the first batch of the input failed: {one_line(exc)}") from None


def cardinality(dataset: Any) -> int:
    try:
        return int(dataset.cardinality())
    except Exception:  # noqa: BLE001 — unknown cardinality
        return UNKNOWN


class GraphPuller:
    """Pulls batches from a tf.data iterator in a graph loop (``pull(k)``): the pipeline alone,
    without a Python call per batch. The loop function is traced once per element structure."""

    def __init__(self) -> None:
        import tensorflow as tf

        @tf.function(autograph=False)
        def pull(it: Any, count: Any) -> Any:
            def body(i: Any) -> Any:
                element = it.get_next()
                with tf.control_dependencies(tf.nest.flatten(element)):
                    return i + 1

            return tf.while_loop(lambda i: i < count, body, [tf.constant(0, tf.int64)])

        self._pull = pull

    def pull(self, iterator: Any, count: int) -> None:
        """Pull ``count`` batches from ``iterator`` in one graph call (OutOfRangeError at its
        end)."""
        import tensorflow as tf

        self._pull(iterator, tf.constant(count, tf.int64))

    def segment(
        self, dataset: Any, warm: int, seconds: float, min_batches: int, deadline: float
    ) -> Segment | None:
        """A timed data-only segment on a fresh iterator of ``dataset``; None when it runs out."""
        import tensorflow as tf

        iterator = iter(dataset)

        def pull(count: int) -> None:
            if count > 0:
                self.pull(iterator, count)

        try:
            return chunked_segment(pull, warm, seconds, min_batches, deadline)
        except tf.errors.OutOfRangeError:
            return None

    def drain(self, dataset: Any, count: int) -> None:
        import tensorflow as tf

        try:
            self.pull(iter(dataset), count)
        except tf.errors.OutOfRangeError:
            pass


_SHARED: list[GraphPuller] = []


def shared_puller() -> GraphPuller:
    """The process's one :class:`GraphPuller`: its loop is traced once per element structure and
    reused by every feed and cache fill with that structure. A puller made per segment traced
    its loop again each time (TensorFlow warned of retracing, and a busy host paid the trace —
    up to a second — inside the measured allowance)."""
    if not _SHARED:
        _SHARED.append(GraphPuller())
    return _SHARED[0]


def detached(dataset: Any) -> Any:
    """A copy of ``dataset`` whose shuffles do not advance the original's seeds; None when the
    graph cannot be serialized (a few exotic stateful sources, tensors beyond protobuf's 2 GB)."""
    import tensorflow as tf

    from advisor.probes.tfdata import PipelineInspectionError, serialized_graph

    try:
        graph = serialized_graph(dataset)
    except PipelineInspectionError:
        return None
    shuffles = [n for n in graph.node if n.op in SEEDED_SHUFFLES]
    for node in shuffles:
        seeds = graph.node.add()
        seeds.name, seeds.op = f"{node.name}/advisor_seeds", "DummySeedGenerator"
        node.input[len(node.input) - 1] = seeds.name
    try:
        variant = tf.raw_ops.DatasetFromGraph(graph_def=graph.SerializeToString())
        return tf.data.experimental.from_variant(variant, dataset.element_spec)
    except Exception:  # noqa: BLE001 — fall back to the dataset itself
        return None


def tfdata_feeds(dataset: Any, backend: str | None = None) -> Feeds:
    copy = detached(dataset)
    notes = [] if copy is not None else [SHARED_ORDER_NOTE]
    dataset = copy if copy is not None else dataset
    cached = dataset.take(1).cache().repeat()
    first = first_element(cached)
    batch_size = leading_dim(first)
    if not batch_size:
        raise InputError(
            "cannot tell the batch size of the input (its first element has no batch axis)"
        )
    card = cardinality(dataset)
    if card == 0:
        raise InputError("the input dataset is empty: it yields no batch to measure")
    real = dataset if card == INFINITE else dataset.repeat()

    def data_only(warm: int, seconds: float, min_batches: int, deadline: float) -> Segment | None:
        return shared_puller().segment(real, warm, seconds, min_batches, deadline)

    def source_cached(batches: int) -> dict[str, Any] | None:
        return _source_cached_feed(
            dataset, min(batches, MAX_SOURCE_CACHE_BATCHES), batch_size, shared_puller()
        )

    return Feeds(
        kind="tf.data",
        batch_size=batch_size,
        cached={"x": cached},
        real={"x": real},
        data_only=data_only,
        source_cached=source_cached,
        first=first,
        notes=notes,
    )


def _source_cached_feed(
    dataset: Any, batches: int, batch_size: int, puller: GraphPuller
) -> dict[str, Any] | None:
    """The pipeline with ``take(batches × batch_size).cache().repeat()`` after its file-reading
    stage, pre-read once so that the measured steps read nothing from storage. None: no file
    source."""
    edited = with_source_cache(dataset, batches * batch_size)
    if edited is None:
        return None
    puller.drain(edited, batches + 2)  # fills the in-memory cache
    return {"x": edited}


def with_source_cache(dataset: Any, elements: int) -> Any:
    """Rebuild ``dataset`` from its GraphDef with take → cache → repeat inserted after the first
    stage that reads files (``rewrite.cache_after``: the what-if's ``cache_source`` edit, so the
    baseline's source-cached arm and that candidate train on the same pipeline). Returns None
    when no stage reads files."""
    from advisor.experiments.feeds.rewrite import cache_after, rebuild
    from advisor.probes.tfdata import serialized_graph, summarize_graph

    reading = next(
        (s for s in summarize_graph(serialized_graph(dataset))["stages"] if s.get("reads_files")),
        None,
    )
    if reading is None:
        return None
    return rebuild(dataset, cache_after(reading["node"], elements))
