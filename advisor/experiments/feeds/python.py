"""The inputs a baseline trains on, for every kind of data ``fit`` accepts.

For arrays, generators, PyDataset and torch DataLoaders this module builds the *feeds* the
baseline needs: the real input (endless, or finite and then replayed epoch after epoch as
training does), the first batch served from memory (the cached-input ceiling), a time-boxed way
to iterate the input without training (data-only), and for tf.data pipelines that read files,
the same pipeline with a cache right after the reading stage (checklist S304; tf.data feeds:
``feeds.tfdata``; which feeds an input gets: ``feeds.choose``).

Nothing here changes the user's data: tf.data pipelines get fresh iterators, arrays are sliced
(views where possible), one-shot Python generators are never consumed (their first batch was
already peeked by Keras).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from advisor.errors import one_line
from advisor.experiments.feeds.base import (
    DataOnly,
    Feeds,
    InputError,
)
from advisor.experiments.segments import Segment, pull_segment
from advisor.probes.batch import leading_dim


def _strip_none(batch: Any) -> Any:
    """(x, y, None) → (x, y): tf.data cannot hold None. Anything else is left as it is."""
    if isinstance(batch, tuple):
        items = list(batch)
        while items and items[-1] is None:
            items.pop()
        return tuple(items)
    return batch


def packed(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """One batch of arrays in the structure Keras's array adapter gives ``train_step``
    (``keras.utils.pack_x_y_sample_weight``): ``x`` alone when there is no ``y`` and ``x`` is not
    a tuple or list, so that a model with its own ``train_step`` fed ``fit(x)`` gets the same
    batch from the baseline as from training."""
    if y is None and sample_weight is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    return _strip_none((x, y, sample_weight))


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
        return (
            type(batch)(_to_numpy(v) for v in batch)
            if isinstance(batch, tuple)
            else [_to_numpy(v) for v in batch]
        )
    return convert(batch)


def memory_feed(batch: Any, backend: str | None) -> dict[str, Any]:
    """fit kwargs that replay one batch from memory forever, in the structure it came in (a bare
    array stays bare: a custom ``train_step`` receives exactly what training gave it). A list at
    the top becomes a tuple, as Keras's own unpacking does, since tf.data would stack it."""
    batch = _strip_none(tuple(batch) if isinstance(batch, list) else batch)
    if backend in (None, "tensorflow"):
        import tensorflow as tf

        # unbatched and batched again: the batch axis is unknown, as in the adapters' datasets,
        # so that the step compiled for training is reused instead of traced for a fixed shape
        rows = leading_dim(batch)
        one = tf.data.Dataset.from_tensors(batch)
        if rows:
            one = one.unbatch().batch(rows)
        return {"x": one.cache().repeat()}

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


def array_feeds(
    x: Any,
    y: Any,
    sample_weight: Any,
    batch_size: int,
    shuffle: Any,
    backend: str | None,
    legacy: bool = False,
) -> Feeds:
    """Arrays: real = the arrays through Keras's own array adapter. ``resize(n)`` slices them to at
    most ``n`` whole batches (a view where the arrays allow it): one epoch of the baseline is one
    pass over the slice, as long as the user's epoch or ``n`` batches, whichever is shorter."""
    import numpy as np

    rows = leading_dim(x)
    if not rows:
        raise InputError("the input arrays are empty: no batch to measure")
    first_index = np.arange(min(batch_size, rows))
    batch = [_take_rows(v, first_index) for v in (x, y, sample_weight)]
    first = packed(*batch)
    feeds = Feeds("numpy", batch_size, _array_memory_feed(batch, backend, legacy), first=first)
    arrays: dict[str, Any] = {}
    pipelines: dict[str, Any] = {}

    def resize(batches: int) -> None:
        if rows < batch_size:  # one batch, tiled: every step sees a whole batch
            index: Any = np.arange(batch_size) % rows
            whole = 1
        else:
            whole = max(1, min(batches, rows // batch_size))
            index = slice(0, whole * batch_size)
        xs, ys, sws = (_take_rows(v, index) for v in (x, y, sample_weight))
        arrays.update(x=xs, y=ys, sample_weight=sws)
        pipelines.clear()
        feeds.real = {**arrays, "batch_size": batch_size, "shuffle": shuffle}
        feeds.real_batches = whole

    def data_only(warm: int, seconds: float, min_batches: int, deadline: float) -> Segment | None:
        from advisor.experiments.feeds.tfdata import shared_puller

        xs, ys, sws = arrays["x"], arrays["y"], arrays["sample_weight"]
        if legacy or backend in (None, "tensorflow"):
            # one dataset per slice and the process's one puller: a new adapter or puller per
            # segment traced the puller's loop again (TensorFlow's retracing warning)
            if "dataset" not in pipelines:  # made again after a resize
                pipelines["dataset"] = _array_dataset(xs, ys, sws, batch_size, shuffle, legacy)
            return shared_puller().segment(
                pipelines["dataset"], warm, seconds, min_batches, deadline
            )
        adapter = _keras_adapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle)
        return python_data_only(adapter.get_numpy_iterator)(warm, seconds, min_batches, deadline)

    resize(1)
    feeds.resize = resize
    feeds.data_only = data_only
    return feeds


def _array_dataset(xs: Any, ys: Any, sws: Any, batch_size: int, shuffle: Any, legacy: bool) -> Any:
    """The arrays as training's adapter batches them, repeated (the data-only feed)."""
    if legacy:  # tf_keras: its own array adapter (Keras 3's is not loaded in a tf_keras job)
        from tf_keras.src.engine.data_adapter import TensorLikeDataAdapter

        adapter = TensorLikeDataAdapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle)
        return adapter.get_dataset().repeat()
    adapter = _keras_adapter(xs, ys, sws, batch_size=batch_size, shuffle=shuffle)
    return adapter.get_tf_dataset().repeat()


def _array_memory_feed(batch: list[Any], backend: str | None, legacy: bool) -> dict[str, Any]:
    """The first batch of arrays from memory. On TensorFlow it goes through Keras's own array
    adapter, as training's batches did: the same structure and the same element spec, so the
    nested ``fit`` reuses the step compiled for training instead of tracing it again (a retrace
    of a Transformer's step took 10 s of a 3 s allowance on a busy host)."""
    if backend in (None, "tensorflow") and not legacy:
        try:
            x, y, sample_weight = batch
            adapter = _keras_adapter(x, y, sample_weight, batch_size=leading_dim(x), shuffle=False)
            return {"x": adapter.get_tf_dataset().take(1).cache().repeat()}
        except Exception:  # noqa: BLE001 — the plain feed below holds the same batch
            pass
    return memory_feed(packed(*batch), backend)


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
        feeds.notes.append(
            "a Python generator cannot be replayed: real throughput comes from training"
        )
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
    if not isinstance(first, tuple):  # Keras's PyDataset adapter gives train_step (x,)
        first = (first,)
    legacy = not hasattr(py_dataset, "num_batches")
    num = len(py_dataset) if legacy else py_dataset.num_batches
    if not legacy:
        from advisor.experiments.feeds.shield import ShieldedPyDataset

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

    return Feeds(
        "pydataset",
        batch_size,
        memory_feed(first, backend),
        {"x": py_dataset},
        num,
        python_data_only(one_pass),
        first=first,
    )


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
    return Feeds(
        "torch",
        batch_size,
        memory_feed(_to_numpy(first), backend),
        {"x": loader},
        num,
        python_data_only(lambda: iter(loader)),
        first=_to_numpy(first),
    )
