"""Which feeds an input gets: from the input a running fit iterates (``feeds_from_session``) or
from what a user passes to ``measure_input`` / ``whatif`` (``feeds_from_user``)."""

from __future__ import annotations

from typing import Any

from advisor.errors import one_line
from advisor.experiments.feeds.base import (
    INFINITE,
    UNKNOWN,
    Feeds,
    InputError,
)
from advisor.experiments.feeds.python import (
    array_feeds,
    generator_feeds,
    pydataset_feeds,
    torch_feeds,
)
from advisor.probes.batch import leading_dim


def feeds_from_session(data: Any, backend: str | None, training_done: bool = True) -> Feeds:
    """Feeds from what the callback learned about fit's input (``session.data``).

    ``training_done``: the baseline runs after training (``baseline="end"``). Only then may a
    tf_keras generator input give up one more batch (tf_keras keeps no copy of the batch it
    peeked at): training no longer needs it.
    """
    from advisor.experiments.feeds.tfdata import tfdata_feeds

    kind = data.kind
    adapter = data.adapter
    if kind == "tf.data":
        dataset = data.dataset
        if dataset is None or not is_tf_dataset(dataset):
            raise InputError(
                f"the input is a {type(dataset).__name__}, not a tf.data.Dataset the baseline "
                "can replay"
            )
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
        return array_feeds(
            x, y, sw, int(data.batch_size), getattr(adapter, "_shuffle", False), backend
        )
    if kind == "generator":
        first = (getattr(adapter, "_first_batches", None) or [None])[0]
        if first is None and callable(getattr(adapter, "get_dataset", None)):  # tf_keras
            return _tf_keras_generator_feeds(adapter.get_dataset(), training_done)
        if first is None:
            raise InputError("the generator's first batch is not available")
        return generator_feeds(first, backend)
    if kind == "pydataset":
        py_dataset = getattr(adapter, "py_dataset", None) or getattr(
            adapter, "_keras_sequence", None
        )
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
    from advisor.experiments.feeds.tfdata import first_element

    if not training_done:
        raise InputError(
            "under tf_keras a generator's batch can only be taken after training: "
            "use baseline='end'"
        )
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
    from advisor.experiments.feeds.tfdata import cardinality

    if is_tf_dataset(data):
        card = cardinality(data)
        if card == INFINITE:
            raise InputError(
                "the dataset is infinite: pass steps=N to say how many batches to measure"
            )
        if card == UNKNOWN:
            raise InputError("the dataset's length is unknown: pass steps=N")
        if card == 0:
            raise InputError("the input dataset is empty: it yields no batch to measure")
        return card
    if is_generator(data):
        raise InputError("a generator has no length: pass steps=N")
    if is_pydataset(data) or type(data).__name__ == "DataLoader":
        try:
            num = getattr(data, "num_batches", None) if is_pydataset(data) else None
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


def feeds_from_user(
    data: Any, batch_size: int | None, backend: str | None, legacy: bool = False
) -> Feeds:
    """Feeds for ``measure_input(model, data)``; ``legacy``: the model is a tf_keras one."""
    if is_tf_dataset(data):
        from advisor.experiments.feeds.tfdata import tfdata_feeds

        return tfdata_feeds(data, backend)
    if is_generator(data):
        try:
            first = next(data)
        except StopIteration:
            raise InputError("the generator is empty: it yields no batch to measure") from None
        except Exception as exc:
            raise InputError(f"the first batch of the generator failed: {one_line(exc)}") from None
        import itertools

        return generator_feeds(first, backend, itertools.chain([first], data))
    if is_pydataset(data):
        return pydataset_feeds(data, backend)
    if type(data).__name__ == "DataLoader":
        return torch_feeds(data, backend)
    if isinstance(data, tuple) and 1 <= len(data) <= 3:
        x, y, sw = (tuple(data) + (None, None))[:3]
    elif isinstance(data, dict) or hasattr(data, "shape"):
        x, y, sw = data, None, None
    else:
        raise InputError(
            f"unsupported input {type(data).__name__}: pass a tf.data.Dataset, a tuple (x, y) "
            "of arrays, a keras.utils.PyDataset, a torch DataLoader or a generator"
        )
    return array_feeds(x, y, sw, int(batch_size or 32), True, backend, legacy)


def is_generator(value: Any) -> bool:
    import inspect

    return inspect.isgenerator(value) or (
        hasattr(value, "__next__") and hasattr(value, "__iter__") and not hasattr(value, "__len__")
    )


def is_tf_dataset(value: Any) -> bool:
    if type(value).__module__.split(".")[0] != "tensorflow":
        return False
    import tensorflow as tf

    return isinstance(value, tf.data.Dataset)


def is_pydataset(value: Any) -> bool:
    return any(c.__name__ in ("PyDataset", "Sequence") for c in type(value).__mro__[1:])
