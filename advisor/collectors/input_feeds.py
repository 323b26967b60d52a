"""The inputs a baseline trains on, for every kind of data ``fit`` accepts.

For each input kind this module builds the *feeds* the baseline needs: the real input (enough
batches for warm-up plus measurement), the first batch served from memory (the cached-input
ceiling), a way to iterate the input without training (data-only), and for tf.data pipelines
that read files, the same pipeline with a cache right after the reading stage (checklist S304).

Nothing here changes the user's data: tf.data pipelines get fresh iterators, arrays are sliced
into copies, one-shot Python generators are never consumed (their first batch was already peeked
by Keras).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import AdvisorError

INFINITE = -1
UNKNOWN = -2


class InputError(AdvisorError):
    """The training input cannot be measured: empty, failing, infinite without steps, unreadable."""


def one_line(exc: BaseException) -> str:
    """``TypeName: first line of the message``, without TF's op-trace decorations."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    first = first.split(" [[")[0].split("\tEncountered when")[0]
    first = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", first)
    first = re.sub(r"\s*\[Op:[^\]]*\].*$", "", first)
    first = re.sub(r" with iterator: \S+:", ":", first).strip()
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


@dataclass
class Feeds:
    """What the baseline can train on and iterate, for one input."""

    kind: str
    batch_size: int
    cached: dict[str, Any]  # fit kwargs: the first batch repeated from memory
    real: dict[str, Any] | None = None  # fit kwargs: the real input
    real_batches: int | None = None  # batches the real feed holds (None: as many as asked)
    data_only: Callable[[int, int], float | None] | None = None  # (warm, n) → seconds for n batches
    source_cached: Callable[[], dict[str, Any] | None] | None = None  # built lazily (it pre-reads)
    notes: list[str] = field(default_factory=list)
    first: Any = None  # the first batch (builds an unbuilt model before the state snapshot)


# ---------------------------------------------------------------------------------------------
# helpers


def leading_dim(batch: Any) -> int | None:
    """Size of the first axis of the first array-like leaf of a (nested) batch."""
    stack = [batch]
    while stack:
        item = stack.pop(0)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif item is not None:
            shape = getattr(item, "shape", None)
            if shape is not None and len(shape) > 0 and shape[0] is not None:
                return int(shape[0])
    return None


def _strip_none(batch: Any) -> Any:
    """(x, y, None) → (x, y): tf.data cannot hold None."""
    if isinstance(batch, tuple):
        items = list(batch)
        while items and items[-1] is None:
            items.pop()
        return tuple(items)
    return batch


def _to_numpy(batch: Any) -> Any:
    import numpy as np

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
            try:
                return value.numpy()
            except Exception:
                pass
        try:
            import keras

            return keras.ops.convert_to_numpy(value)
        except Exception:
            return np.asarray(value)

    if isinstance(batch, dict):
        return {k: _to_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_numpy(v) for v in batch) if isinstance(batch, tuple) else [_to_numpy(v) for v in batch]
    return convert(batch)


def memory_feed(batch: Any, backend: str | None) -> dict[str, Any]:
    """fit kwargs that replay one batch from memory forever."""
    batch = _strip_none(batch if isinstance(batch, tuple) else (batch,))
    if backend in (None, "tensorflow"):
        import tensorflow as tf

        return {"x": tf.data.Dataset.from_tensors(batch).repeat()}

    def forever() -> Iterator[Any]:
        while True:
            yield batch

    return {"x": forever()}


def _timed_iteration(make_iter: Callable[[], Iterator[Any]], warm: int, n: int) -> float | None:
    iterator = make_iter()
    try:
        for _ in range(warm):
            next(iterator)
        t0 = time.perf_counter()
        for _ in range(n):
            next(iterator)
        return time.perf_counter() - t0
    except StopIteration:
        return None


# ---------------------------------------------------------------------------------------------
# tf.data


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
    except Exception as exc:
        raise InputError(f"the first batch of the input failed: {one_line(exc)}") from None


def cardinality(dataset: Any) -> int:
    try:
        return int(dataset.cardinality())
    except Exception:
        return UNKNOWN


def tfdata_drain(dataset: Any, warm: int, n: int) -> float | None:
    """Seconds to pull n batches (after ``warm``) in a graph loop: the pipeline alone."""
    import tensorflow as tf

    iterator = iter(dataset)

    @tf.function(autograph=False)
    def pull(it: Any, count: Any) -> Any:
        def body(i: Any) -> Any:
            element = it.get_next()
            with tf.control_dependencies(tf.nest.flatten(element)):
                return i + 1

        return tf.while_loop(lambda i: i < count, body, [tf.constant(0, tf.int64)])

    try:
        pull(iterator, tf.constant(warm, tf.int64))
        t0 = time.perf_counter()
        pull(iterator, tf.constant(n, tf.int64))
        return time.perf_counter() - t0
    except tf.errors.OutOfRangeError:
        return None


def tfdata_feeds(dataset: Any, need: int, backend: str | None = None) -> Feeds:
    cached = dataset.take(1).cache().repeat()
    first = first_element(cached)
    batch_size = leading_dim(first)
    if not batch_size:
        raise InputError("cannot tell the batch size of the input (its first element has no batch axis)")
    card = cardinality(dataset)
    if card == 0:
        raise InputError("the input dataset is empty: it yields no batch to measure")
    real = dataset if card == INFINITE or card >= need else dataset.repeat()
    feeds = Feeds(
        kind="tf.data",
        batch_size=batch_size,
        cached={"x": cached},
        real={"x": real},
        data_only=lambda warm, n: tfdata_drain(real, warm, n),
        first=first,
    )
    feeds.source_cached = lambda: _source_cached_feed(dataset, need * batch_size, need)
    return feeds


def _source_cached_feed(dataset: Any, elements: int, prefill_batches: int) -> dict[str, Any] | None:
    """The pipeline with ``take(elements).cache().repeat()`` after its file-reading stage,
    pre-read once so that the measured steps read nothing from storage. None: no file source."""
    edited = with_source_cache(dataset, elements)
    if edited is None:
        return None
    tfdata_drain(edited, prefill_batches + 2, 1)  # fills the in-memory cache
    return {"x": edited}


def with_source_cache(dataset: Any, elements: int) -> Any:
    """Rebuild ``dataset`` from its GraphDef with take → cache → repeat inserted after the first
    stage that reads files. Returns None when no stage reads files."""
    import tensorflow as tf

    from advisor.probes.tfdata import serialized_graph, summarize_graph

    graph = serialized_graph(dataset)
    summary = summarize_graph(graph)
    reading = next((s for s in summary["stages"] if s.get("reads_files")), None)
    if reading is None:
        return None
    nodes = {n.name: n for n in graph.node}
    source = nodes[reading["node"]]
    types, shapes = source.attr.get("output_types"), source.attr.get("output_shapes")
    if types is None or not types.list.type:
        return None

    def const(name: str, value: Any, dtype: Any) -> str:
        node = graph.node.add()
        node.name, node.op = name, "Const"
        node.attr["dtype"].type = dtype.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
        return name

    def dataset_node(name: str, op: str, inputs: list[str]) -> str:
        node = graph.node.add()
        node.name, node.op = name, op
        node.input.extend(inputs)
        node.attr["output_types"].CopyFrom(types)
        node.attr["output_shapes"].CopyFrom(shapes)
        return name

    consumers = [n for n in graph.node if source.name in [i.split(":")[0] for i in n.input]]
    take = dataset_node("advisor/take", "TakeDataset", [source.name, const("advisor/take_n", elements, tf.int64)])
    memory = graph.node.add()
    memory.name, memory.op = "advisor/memory_cache", "DummyMemoryCache"
    cache = dataset_node("advisor/cache", "CacheDatasetV2",
                         [take, const("advisor/cache_file", "", tf.string), memory.name])
    repeat = dataset_node("advisor/repeat", "RepeatDataset", [cache, const("advisor/repeat_n", -1, tf.int64)])
    for consumer in consumers:
        for i, name in enumerate(consumer.input):
            if name.split(":")[0] == source.name:
                consumer.input[i] = repeat
    variant = tf.raw_ops.DatasetFromGraph(graph_def=graph.SerializeToString())
    return tf.data.experimental.from_variant(variant, dataset.element_spec)


# ---------------------------------------------------------------------------------------------
# arrays, generators, PyDataset, torch


def _take_rows(value: Any, index: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: _take_rows(v, index) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_take_rows(v, index) for v in value)
    if hasattr(value, "iloc"):
        return value.iloc[index]
    if type(value).__module__.startswith("tensorflow"):
        import tensorflow as tf

        return tf.gather(value, index)
    return value[index]


def array_feeds(x: Any, y: Any, sample_weight: Any, batch_size: int, shuffle: Any, need: int,
                backend: str | None, legacy: bool = False) -> Feeds:
    """Arrays: real = the arrays through Keras's own array adapter, sliced to ``need`` batches."""
    import numpy as np

    rows = leading_dim(x)
    if not rows:
        raise InputError("the input arrays are empty: no batch to measure")
    index = np.arange(need * batch_size) % rows
    xs, ys, sws = (_take_rows(v, index) for v in (x, y, sample_weight))
    first_index = np.arange(min(batch_size, rows))
    first = tuple(_take_rows(v, first_index) for v in (x, y, sample_weight))
    real = {"x": xs, "y": ys, "sample_weight": sws, "batch_size": batch_size, "shuffle": shuffle}

    def data_only(warm: int, n: int) -> float | None:
        if legacy:  # tf_keras: its own array adapter (Keras 3's is not loaded in a tf_keras job)
            from tf_keras.src.engine.data_adapter import TensorLikeDataAdapter

            dataset = TensorLikeDataAdapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle).get_dataset()
            return tfdata_drain(dataset, warm, n)
        adapter = _keras_adapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle)
        if backend in (None, "tensorflow"):
            return tfdata_drain(adapter.get_tf_dataset(), warm, n)
        return _timed_iteration(adapter.get_numpy_iterator, warm, n)

    return Feeds("numpy", batch_size, memory_feed(first, backend), real, need, data_only, first=first)


def _keras_adapter(x: Any, y: Any = None, sample_weight: Any = None, **kwargs: Any) -> Any:
    from keras.src.trainers.data_adapters import get_data_adapter

    return get_data_adapter(x, y, sample_weight, **kwargs)


def generator_feeds(first_batch: Any, backend: str | None, generator: Any = None) -> Feeds:
    """Python generators can be read only once: the baseline trains on the first batch from memory;
    with ``generator`` given (the plain API), it also trains on the real input."""
    batch_size = leading_dim(first_batch)
    if not batch_size:
        raise InputError("cannot tell the batch size of the generator's first batch")
    feeds = Feeds("generator", batch_size, memory_feed(first_batch, backend), first=first_batch)
    if generator is not None:
        feeds.real = {"x": generator}
    else:
        feeds.notes.append("a Python generator cannot be replayed: real throughput comes from training")
    feeds.notes.append("data-only throughput is not measured for Python generators")
    return feeds


def pydataset_feeds(py_dataset: Any, backend: str | None) -> Feeds:
    """A Keras 3 PyDataset, or a tf_keras ``Sequence`` (no ``num_batches``, no Keras 3 adapter)."""
    try:
        first = py_dataset[0]
    except Exception as exc:
        raise InputError(f"the first batch of the PyDataset failed: {one_line(exc)}") from None
    batch_size = leading_dim(first)
    if not batch_size:
        raise InputError("cannot tell the batch size of the PyDataset's first batch")
    if not isinstance(first, tuple):
        first = (first,)
    legacy = not hasattr(py_dataset, "num_batches")
    num = len(py_dataset) if legacy else py_dataset.num_batches

    def data_only(warm: int, n: int) -> float | None:
        if legacy:  # tf_keras Sequence: index it as tf_keras's enqueuer does (one worker)
            size = len(py_dataset)
            return _timed_iteration(lambda: (py_dataset[i % size] for i in range(warm + n)), warm, n)
        adapter = _keras_adapter(py_dataset, shuffle=False)
        adapter.on_epoch_begin()
        try:
            return _timed_iteration(adapter.get_numpy_iterator, warm, n)
        finally:
            adapter.on_epoch_end()

    return Feeds("pydataset", batch_size, memory_feed(first, backend), {"x": py_dataset}, num, data_only,
                 first=first)


def torch_feeds(loader: Any, backend: str | None) -> Feeds:
    try:
        first = next(iter(loader))
    except StopIteration:
        raise InputError("the DataLoader is empty: it yields no batch to measure") from None
    except Exception as exc:
        raise InputError(f"the first batch of the DataLoader failed: {one_line(exc)}") from None
    batch_size = leading_dim(first)
    if not batch_size:
        raise InputError("cannot tell the batch size of the DataLoader's first batch")
    first = tuple(first) if isinstance(first, list) else first
    try:
        num = len(loader)
    except TypeError:
        num = None
    return Feeds("torch", batch_size, memory_feed(_to_numpy(first), backend), {"x": loader}, num,
                 lambda warm, n: _timed_iteration(lambda: iter(loader), warm, n), first=_to_numpy(first))


# ---------------------------------------------------------------------------------------------
# entry points


def feeds_from_session(data: Any, need: int, backend: str | None, training_done: bool = True) -> Feeds:
    """Feeds from what the callback learned about fit's input (``session.data``).

    ``training_done``: the baseline runs after training (``baseline="end"``). Only then may a
    tf_keras generator input give up one more batch (tf_keras keeps no copy of the batch it
    peeked at): training no longer needs it.
    """
    kind = data.kind
    adapter = data.adapter
    if kind == "tf.data":
        dataset = data.dataset
        if dataset is None or not _is_tf_dataset(dataset):
            raise InputError(f"the input is a {type(dataset).__name__}, not a tf.data.Dataset the baseline can replay")
        return tfdata_feeds(dataset, need, backend)
    if kind == "numpy":
        inputs = getattr(adapter, "_inputs", None)
        if inputs is None and callable(getattr(adapter, "get_dataset", None)):  # tf_keras
            feeds = tfdata_feeds(adapter.get_dataset(), need, backend)
            feeds.kind = "numpy"
            return feeds
        if inputs is None or not data.batch_size:
            raise InputError("cannot reach the input arrays through Keras's array adapter")
        import keras

        x, y, sw = keras.utils.unpack_x_y_sample_weight(inputs)
        return array_feeds(x, y, sw, int(data.batch_size), getattr(adapter, "_shuffle", False), need, backend)
    if kind == "generator":
        first = (getattr(adapter, "_first_batches", None) or [None])[0]
        if first is None and callable(getattr(adapter, "get_dataset", None)):  # tf_keras
            return _tf_keras_generator_feeds(adapter.get_dataset(), training_done)
        if first is None:
            raise InputError("the generator's first batch is not available")
        return generator_feeds(first, backend)
    if kind == "pydataset":
        py_dataset = getattr(adapter, "py_dataset", None) or getattr(adapter, "_keras_sequence", None)
        if py_dataset is None:
            raise InputError("cannot reach the PyDataset through Keras's adapter")
        return pydataset_feeds(py_dataset, backend)
    if kind == "torch":
        loader = getattr(adapter, "_dataloader", None)
        if loader is None:
            raise InputError("cannot reach the DataLoader through Keras's adapter")
        return torch_feeds(loader, backend)
    raise InputError(f"the baseline does not support this input kind: {kind or 'unknown'}")


def _tf_keras_generator_feeds(dataset: Any, training_done: bool) -> Feeds:
    """tf_keras wraps a generator in ``from_generator``: after training, its next batch is the
    cached one (a generator cannot be replayed, so there is no real-input run)."""
    if not training_done:
        raise InputError("under tf_keras a generator's batch can only be taken after training: "
                         "use baseline='end'")
    cached = dataset.take(1).cache().repeat()
    try:
        first = first_element(cached)
    except InputError as exc:
        raise InputError(f"the generator gave no batch after training ({exc})") from None
    batch_size = leading_dim(first)
    if not batch_size:
        raise InputError("cannot tell the batch size of the generator's batches")
    feeds = Feeds("generator", batch_size, {"x": cached}, first=first)
    feeds.notes.append("a Python generator cannot be replayed: real throughput comes from training")
    feeds.notes.append("data-only throughput is not measured for Python generators")
    return feeds


def epoch_batches(data: Any, batch_size: int | None) -> int:
    """Batches in one pass over ``data`` (for ``measure_input(..., steps=None)``)."""
    if _is_tf_dataset(data):
        card = cardinality(data)
        if card == INFINITE:
            raise InputError("the dataset is infinite: pass steps=N to say how many batches to measure")
        if card == UNKNOWN:
            raise InputError("the dataset's length is unknown: pass steps=N")
        if card == 0:
            raise InputError("the input dataset is empty: it yields no batch to measure")
        return card
    if _is_generator(data):
        raise InputError("a generator has no length: pass steps=N")
    if _is_pydataset(data) or type(data).__name__ == "DataLoader":
        try:
            num = getattr(data, "num_batches", None) if _is_pydataset(data) else None
            num = len(data) if num is None else num
        except TypeError:
            num = None
        if not num:
            raise InputError(f"the {type(data).__name__} has no known length: pass steps=N")
        return int(num)
    x = data[0] if isinstance(data, tuple) and data else data
    rows = leading_dim(x)
    if not rows:
        raise InputError("the input arrays are empty: no batch to measure")
    return -(-rows // int(batch_size or 32))


def feeds_from_user(data: Any, need: int, batch_size: int | None, backend: str | None,
                    legacy: bool = False) -> Feeds:
    """Feeds for ``measure_input(model, data)``: ``need`` batches of warm-up plus measurement.
    ``legacy``: the model is a tf_keras one."""
    if _is_tf_dataset(data):
        return tfdata_feeds(data, need, backend)
    if _is_generator(data):
        try:
            first = next(data)
        except StopIteration:
            raise InputError("the generator is empty: it yields no batch to measure") from None
        except Exception as exc:
            raise InputError(f"the first batch of the generator failed: {one_line(exc)}") from None
        import itertools

        return generator_feeds(first, backend, itertools.chain([first], data))
    if _is_pydataset(data):
        return pydataset_feeds(data, backend)
    if type(data).__name__ == "DataLoader":
        return torch_feeds(data, backend)
    if isinstance(data, tuple) and 1 <= len(data) <= 3:
        x, y, sw = (tuple(data) + (None, None))[:3]
    elif isinstance(data, dict) or hasattr(data, "shape"):
        x, y, sw = data, None, None
    else:
        raise InputError(
            f"unsupported input {type(data).__name__}: pass a tf.data.Dataset, a tuple (x, y) of arrays, "
            "a keras.utils.PyDataset, a torch DataLoader or a generator"
        )
    return array_feeds(x, y, sw, int(batch_size or 32), True, need, backend, legacy)


def _is_generator(value: Any) -> bool:
    import inspect

    return inspect.isgenerator(value) or (hasattr(value, "__next__") and hasattr(value, "__iter__")
                                          and not hasattr(value, "__len__"))


def _is_tf_dataset(value: Any) -> bool:
    if type(value).__module__.split(".")[0] != "tensorflow":
        return False
    import tensorflow as tf

    return isinstance(value, tf.data.Dataset)


def _is_pydataset(value: Any) -> bool:
    return any(c.__name__ in ("PyDataset", "Sequence") for c in type(value).__mro__[1:])
