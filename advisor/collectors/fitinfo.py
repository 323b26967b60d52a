"""Find out, from inside ``on_train_begin``, what ``fit`` is iterating over.

Keras does not hand callbacks the data, so we look at the ``fit`` frame that called us: Keras 3
keeps an ``epoch_iterator`` (with its ``data_adapter``) and a ``CallbackList`` there, tf_keras a
``data_handler``. Anything not found leaves the field ``None``; nothing here may raise.
"""

from __future__ import annotations

import sys
from typing import Any

from advisor.collectors.session import DataInfo

_ADAPTER_KINDS = {
    "ArrayDataAdapter": "numpy",
    "TFDatasetAdapter": "tf.data",
    "GeneratorDataAdapter": "generator",
    "PyDatasetAdapter": "pydataset",
    "TorchDataLoaderAdapter": "torch",
    "GrainDatasetAdapter": "grain",
    # tf_keras
    "TensorLikeDataAdapter": "numpy",
    "DatasetAdapter": "tf.data",
    "GeneratorDataAdapter_legacy": "generator",
    "KerasSequenceAdapter": "pydataset",
    "DatasetCreatorAdapter": "tf.data",
}


def find_fit_locals(max_depth: int = 16) -> dict[str, Any] | None:
    """Locals of the nearest enclosing ``fit`` frame (Keras 3 or tf_keras), or None."""
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < max_depth:
        names = frame.f_code.co_varnames
        if frame.f_code.co_name == "fit" and ("epoch_iterator" in names or "data_handler" in names):
            return dict(frame.f_locals)
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return None


def fit_frame_id(max_depth: int = 32) -> int | None:
    """The ``id`` of the nearest enclosing ``fit`` frame (an id, not the frame: holding the frame
    would keep its locals, the data among them, alive after the fit)."""
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < max_depth:
        names = frame.f_code.co_varnames
        if frame.f_code.co_name == "fit" and ("epoch_iterator" in names or "data_handler" in names):
            return id(frame)
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return None


def discover(fit_locals: dict[str, Any] | None) -> tuple[DataInfo, list[Any]]:
    """DataInfo and the list of callbacks given to ``fit``."""
    info = DataInfo()
    callbacks: list[Any] = []
    if not fit_locals:
        return info, callbacks
    cb_list = fit_locals.get("callbacks")
    callbacks = list(getattr(cb_list, "callbacks", None) or [])
    epoch_iterator = fit_locals.get("epoch_iterator")
    if epoch_iterator is not None and hasattr(epoch_iterator, "data_adapter"):
        _from_keras3(epoch_iterator, info)
    elif fit_locals.get("data_handler") is not None:
        _from_tf_keras(fit_locals["data_handler"], info)
    return info, callbacks


def _safe(fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except Exception:
        return default


def _from_keras3(epoch_iterator: Any, info: DataInfo) -> None:
    adapter = epoch_iterator.data_adapter
    info.adapter = adapter
    info.kind = _ADAPTER_KINDS.get(type(adapter).__name__, "unknown")
    info.steps_per_epoch = getattr(epoch_iterator, "steps_per_epoch", None)
    info.num_batches = _safe(lambda: adapter.num_batches)
    batch = _safe(lambda: adapter.batch_size)
    info.batch_size = int(batch) if isinstance(batch, int) or _is_int_like(batch) else None
    if _safe(lambda: adapter.has_partial_batch):
        info.partial_batch_size = _safe(lambda: int(adapter.partial_batch_size))
    if info.kind == "tf.data":
        _from_dataset(adapter, info)
    elif info.kind == "generator" and info.batch_size is None:
        first = getattr(adapter, "_first_batches", None)
        if first:
            info.batch_size = _leading_dim(first[0])
    elif info.kind == "pydataset" and info.batch_size is None:
        info.batch_size = _safe(lambda: _leading_dim(adapter.py_dataset[0]))


def _from_tf_keras(handler: Any, info: DataInfo) -> None:
    adapter: Any = getattr(handler, "_adapter", None)
    info.adapter = adapter
    name = type(adapter).__name__
    info.kind = _ADAPTER_KINDS.get(name, "unknown")
    info.steps_per_epoch = _safe(lambda: handler.inferred_steps)
    info.num_batches = info.steps_per_epoch
    info.batch_size = _safe(lambda: adapter.batch_size())
    if _safe(lambda: adapter.has_partial_batch()):
        info.partial_batch_size = _safe(lambda: adapter.partial_batch_size())
    if info.kind == "tf.data":
        _from_dataset(adapter, info)


def _from_dataset(adapter: Any, info: DataInfo) -> None:
    """A tf.data input: the dataset, and its batch and short last batch where the adapter did not
    say."""
    info.dataset = getattr(adapter, "_dataset", None)
    if info.batch_size is None:
        info.batch_size = _tf_first_batch_size(info.dataset)
    if info.partial_batch_size is None and info.batch_size:
        info.partial_batch_size = _tf_partial_batch(info.dataset, info.batch_size)


def _is_int_like(value: Any) -> bool:
    try:
        return value is not None and int(value) == value
    except Exception:
        return False


def _leading_dim(batch: Any) -> int | None:
    from advisor.probes.batch import leading_dim

    return leading_dim(batch)


def _tf_first_batch_size(dataset: Any) -> int | None:
    """Static batch dim, else the batch stage's size, else the first element's.

    Reading an element is the last resort and is skipped when the pipeline draws from Python
    (``from_generator`` over a one-shot iterator would lose the element it gives us).
    """
    if dataset is None:
        return None
    try:
        import tensorflow as tf

        for spec in tf.nest.flatten(dataset.element_spec):
            dim = spec.shape[0] if spec.shape.rank else None
            if dim is not None:
                return int(dim)
        batch = _tf_batch_stage_size(dataset)
        if batch is not None:
            return batch
        if isinstance(dataset, tf.data.Dataset) and not _draws_from_python(dataset):
            for element in dataset.take(1):
                return _leading_dim(tf.nest.flatten(element))
    except Exception:
        return None
    return None


def _tf_batch_stage_size(dataset: Any) -> int | None:
    """The batch size of the last batch stage, following element-wise stages back to it."""
    ds = dataset
    while ds is not None:
        name = type(ds).__name__
        if name in ("_BatchDataset", "BatchDataset", "_ParallelBatchDataset"):
            return int(ds._batch_size)
        if name not in _ONE_TO_ONE:
            return None
        ds = getattr(ds, "_input_dataset", None)
    return None


def _draws_from_python(dataset: Any) -> bool:
    try:
        graph = dataset._as_serialized_graph().numpy()
    except Exception:
        return True  # cannot tell: do not risk consuming the user's data
    return b"GeneratorDataset" in graph or b"PyFunc" in graph


_ONE_TO_ONE = (
    "_MapDataset",
    "_ParallelMapDataset",
    "PrefetchDataset",
    "_PrefetchDataset",
    "_OptionsDataset",
    "CacheDataset",
    "_CacheDataset",
    "_AssertCardinalityDataset",
)


def _tf_partial_batch(dataset: Any, batch_size: int) -> int | None:
    """Size of the last, smaller batch of a finite batched tf.data pipeline, or None.

    Walks back through element-wise stages (map, prefetch, options, cache) to the batch stage and
    reads its input's cardinality. Any other stage in between makes the answer unknown.
    """
    try:
        ds = dataset
        while ds is not None:
            name = type(ds).__name__
            if name in ("_BatchDataset", "BatchDataset", "_ParallelBatchDataset"):
                if bool(getattr(ds, "_drop_remainder", False)):
                    return None
                size = int(getattr(ds, "_batch_size", batch_size))
                n = int(ds._input_dataset.cardinality())
                if n < 0 or size <= 0:
                    return None
                rest = n % size
                return rest or None
            if name not in _ONE_TO_ONE:
                return None
            ds = getattr(ds, "_input_dataset", None)
    except Exception:
        return None
    return None
