"""The inputs a baseline trains on, for every kind of data ``fit`` accepts.

For each input kind this module builds the *feeds* the baseline needs: the real input (endless,
or finite and then replayed epoch after epoch as training does), the first batch served from
memory (the cached-input ceiling), a time-boxed way to iterate the input without training
(data-only), and for tf.data pipelines that read files, the same pipeline with a cache right
after the reading stage (checklist S304; see ``tfdata_feeds``).

Nothing here changes the user's data: tf.data pipelines get fresh iterators, arrays are sliced
(views where possible), one-shot Python generators are never consumed (their first batch was
already peeked by Keras).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from advisor.collectors.baseline_rounds import Segment, pull_segment
from advisor.collectors.feed_base import (
    INFINITE,
    UNKNOWN,
    DataOnly,
    Feeds,
    InputError,
    leading_dim,
    one_line,
)


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


def endless(make_iter: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """One pass after another of a finite input, as training's epochs go (restarts included)."""
    while True:
        empty = True
        for item in make_iter():
            empty = False
            yield item
        if empty:
            return


def python_data_only(make_iter: Callable[[], Iterator[Any]]) -> DataOnly:
    """A data-only measurement that pulls batches one by one from endless passes of an input."""

    def measure(warm: int, seconds: float, min_batches: int, deadline: float) -> Segment | None:
        iterator = endless(make_iter)
        try:
            return pull_segment(iterator, warm, seconds, min_batches, deadline)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    return measure


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


def array_feeds(x: Any, y: Any, sample_weight: Any, batch_size: int, shuffle: Any,
                backend: str | None, legacy: bool = False) -> Feeds:
    """Arrays: real = the arrays through Keras's own array adapter. ``resize(n)`` slices them to at
    most ``n`` whole batches (a view where the arrays allow it): one epoch of the baseline is one
    pass over the slice, as long as the user's epoch or ``n`` batches, whichever is shorter."""
    import numpy as np

    rows = leading_dim(x)
    if not rows:
        raise InputError("the input arrays are empty: no batch to measure")
    first_index = np.arange(min(batch_size, rows))
    first = tuple(_take_rows(v, first_index) for v in (x, y, sample_weight))
    feeds = Feeds("numpy", batch_size, memory_feed(first, backend), first=first)
    arrays: dict[str, Any] = {}

    def resize(batches: int) -> None:
        if rows < batch_size:  # one batch, tiled: every step sees a whole batch
            index: Any = np.arange(batch_size) % rows
            whole = 1
        else:
            whole = max(1, min(batches, rows // batch_size))
            index = slice(0, whole * batch_size)
        xs, ys, sws = (_take_rows(v, index) for v in (x, y, sample_weight))
        arrays.update(x=xs, y=ys, sample_weight=sws)
        feeds.real = {**arrays, "batch_size": batch_size, "shuffle": shuffle}
        feeds.real_batches = whole

    def data_only(warm: int, seconds: float, min_batches: int, deadline: float) -> Segment | None:
        from advisor.collectors.tfdata_feeds import GraphPuller

        xs, ys, sws = arrays["x"], arrays["y"], arrays["sample_weight"]
        if legacy:  # tf_keras: its own array adapter (Keras 3's is not loaded in a tf_keras job)
            from tf_keras.src.engine.data_adapter import TensorLikeDataAdapter

            dataset = TensorLikeDataAdapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle).get_dataset()
            return GraphPuller().segment(dataset.repeat(), warm, seconds, min_batches, deadline)
        adapter = _keras_adapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle)
        if backend in (None, "tensorflow"):
            return GraphPuller().segment(adapter.get_tf_dataset().repeat(), warm, seconds, min_batches, deadline)
        return python_data_only(adapter.get_numpy_iterator)(warm, seconds, min_batches, deadline)

    resize(1)
    feeds.resize = resize
    feeds.data_only = data_only
    return feeds


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
    """A Keras 3 PyDataset (read through :class:`ShieldedPyDataset`, so that the user's epoch hooks
    do not run), or a tf_keras ``Sequence`` (no ``num_batches``, no Keras 3 adapter)."""
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
    if not legacy:
        from advisor.collectors.pydataset_shield import ShieldedPyDataset

        py_dataset = ShieldedPyDataset(py_dataset)

    def one_pass() -> Iterator[Any]:
        if legacy:  # tf_keras Sequence: index it as tf_keras's enqueuer does (one worker)
            yield from (py_dataset[i] for i in range(len(py_dataset)))
            return
        adapter = _keras_adapter(py_dataset, shuffle=False)
        adapter.on_epoch_begin()
        try:
            yield from adapter.get_numpy_iterator()
        finally:
            adapter.on_epoch_end()

    return Feeds("pydataset", batch_size, memory_feed(first, backend), {"x": py_dataset}, num,
                 python_data_only(one_pass), first=first)


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
                 python_data_only(lambda: iter(loader)), first=_to_numpy(first))


# ---------------------------------------------------------------------------------------------
# entry points


def feeds_from_session(data: Any, backend: str | None, training_done: bool = True) -> Feeds:
    """Feeds from what the callback learned about fit's input (``session.data``).

    ``training_done``: the baseline runs after training (``baseline="end"``). Only then may a
    tf_keras generator input give up one more batch (tf_keras keeps no copy of the batch it
    peeked at): training no longer needs it.
    """
    from advisor.collectors.tfdata_feeds import tfdata_feeds

    kind = data.kind
    adapter = data.adapter
    if kind == "tf.data":
        dataset = data.dataset
        if dataset is None or not _is_tf_dataset(dataset):
            raise InputError(f"the input is a {type(dataset).__name__}, not a tf.data.Dataset the baseline can replay")
        return tfdata_feeds(dataset, backend)
    if kind == "numpy":
        inputs = getattr(adapter, "_inputs", None)
        if inputs is None and callable(getattr(adapter, "get_dataset", None)):  # tf_keras
            feeds = tfdata_feeds(adapter.get_dataset(), backend)
            feeds.kind = "numpy"
            return feeds
        if inputs is None or not data.batch_size:
            raise InputError("cannot reach the input arrays through Keras's array adapter")
        import keras

        x, y, sw = keras.utils.unpack_x_y_sample_weight(inputs)
        return array_feeds(x, y, sw, int(data.batch_size), getattr(adapter, "_shuffle", False), backend)
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
    from advisor.collectors.tfdata_feeds import first_element

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
    from advisor.collectors.tfdata_feeds import cardinality

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


def feeds_from_user(data: Any, batch_size: int | None, backend: str | None, legacy: bool = False) -> Feeds:
    """Feeds for ``measure_input(model, data)``; ``legacy``: the model is a tf_keras one."""
    if _is_tf_dataset(data):
        from advisor.collectors.tfdata_feeds import tfdata_feeds

        return tfdata_feeds(data, backend)
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
    return array_feeds(x, y, sw, int(batch_size or 32), True, backend, legacy)


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
