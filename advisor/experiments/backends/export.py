"""What travels to a backend candidate's process: the model (a ``.keras`` file: config, weights
and compile config; or its config and weights when the file cannot be written), the modules that
define its custom classes, and a sample of real batches as ``.npz``.

Nothing here changes the user's model: saving reads its variables, the sample reads copies of
batches (a tf.data pipeline is iterated afresh, arrays are sliced).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import UsageError
from advisor.experiments.feeds.base import InputError

SAMPLE_BATCHES = 32  # real batches the candidates train on (cycled)
MODEL_FILE = "model.keras"
CONFIG_FILE = "model.json"  # the fallback: {"config": ..., "compile": ...} beside model.weights.h5
WEIGHTS_FILE = "model.weights.h5"
BATCHES_FILE = "batches.npz"
LAYOUT_KEY = "__layout__"


@dataclass
class Exported:
    """Where the model and the batches were written, and what a child needs to rebuild them."""

    model_path: Path
    batches_path: Path
    batch_size: int
    batches: int
    modules: list[str] = field(
        default_factory=list
    )  # modules defining custom classes, to import first
    script_classes: list[str] = field(default_factory=list)  # custom classes defined in __main__
    note: str | None = None  # why the fallback (config + weights) was used
    custom_path: Path | None = None  # the user's classes and functions (custom.py), pickled
    ported: dict[str, Path] = field(default_factory=dict)  # module → its rewrite (portable.py)
    # why classes that only travel by value (a script's, a notebook's) could not: no candidate can
    # rebuild the model then
    custom_error: str | None = None


def custom_modules(model: Any) -> tuple[list[str], list[str]]:
    """(importable modules, classes defined in ``__main__``) of the model's non-Keras classes:
    a fresh process finds a registered custom class only once its module is imported."""
    objects: list[Any] = [model]
    objects += list(
        getattr(model, "_flatten_layers", lambda **_: [])(include_self=False, recursive=True)
    )
    for attr in ("optimizer", "loss"):
        value = getattr(model, attr, None)
        if value is not None and not isinstance(value, (str, list, dict, tuple)):
            objects.append(value)
    modules: list[str] = []
    script: list[str] = []
    for obj in objects:
        cls = obj if isinstance(obj, type) else type(obj)
        module = cls.__module__ or ""
        if module.split(".")[0] in {
            "keras",
            "tensorflow",
            "tf_keras",
            "jax",
            "torch",
            "builtins",
            "keras_hub",
        }:
            continue
        if module == "__main__":
            script.append(cls.__qualname__)
        elif module not in modules:
            modules.append(module)
    return modules, sorted(set(script))


def export_model(model: Any, directory: Path) -> tuple[Path, str | None]:
    """Write ``model`` into ``directory``: a ``.keras`` file, or (when saving fails, e.g. an
    object that cannot be serialised whole) its config, compile config and weights. Returns the
    path a child loads and the reason for the fallback, if one was used."""
    path = directory / MODEL_FILE
    try:
        model.save(path)
        return path, None
    except Exception as exc:  # noqa: BLE001 — the fallback below says what failed
        reason = _whole(exc)
    try:
        compile_config = (
            model.get_compile_config() if hasattr(model, "get_compile_config") else None
        )
        document = {
            "class": _class_path(model),
            "config": model.get_config(),
            "compile": compile_config,
        }
        (directory / CONFIG_FILE).write_text(json.dumps(document, default=_no_json))
        model.save_weights(directory / WEIGHTS_FILE)
    except Exception as exc:  # noqa: BLE001 — neither way works: the user is told both reasons
        raise UsageError(
            f"the model cannot be exported for the backend what-if: saving it failed "
            f"({reason}); so did its config and weights ({_whole(exc)})"
        ) from None
    return (
        directory / CONFIG_FILE,
        f"saved as config + weights (saving a .keras file failed: {reason})",
    )


def _whole(exc: BaseException) -> str:
    """``exc`` on one line, whole but for Keras's code example ("Object X was created by passing
    non-serializable argument values …", not its first line alone)."""
    text = " ".join(str(exc).split("Example:")[0].split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _class_path(model: Any) -> str:
    return f"{type(model).__module__}:{type(model).__qualname__}"


def _no_json(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# -- batches ------------------------------------------------------------------------------------


def _flatten(prefix: str, value: Any, out: dict[str, np.ndarray]) -> Any:
    """Arrays of ``value`` (an array, a tuple/list or a dict of arrays) into ``out``; its layout."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {"dict": {str(k): _flatten(f"{prefix}.{k}", v, out) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"list": [_flatten(f"{prefix}.{i}", v, out) for i, v in enumerate(value)]}
    out[prefix] = np.asarray(value)
    return prefix


def unflatten(layout: Any, arrays: Any, index: slice) -> Any:
    """The inverse of ``_flatten`` for the rows ``index`` of every array."""
    if layout is None:
        return None
    if isinstance(layout, str):
        return arrays[layout][index]
    if "dict" in layout:
        return {k: unflatten(v, arrays, index) for k, v in layout["dict"].items()}
    return tuple(unflatten(v, arrays, index) for v in layout["list"])


def _rows(value: Any) -> int:
    if isinstance(value, dict):
        return _rows(next(iter(value.values())))
    if isinstance(value, (list, tuple)):
        return _rows(value[0])
    return int(np.shape(value)[0])


def _split(batch: Any) -> tuple[Any, Any]:
    if isinstance(batch, tuple) and 1 <= len(batch) <= 3:
        return batch[0], batch[1] if len(batch) > 1 else None
    return batch, None


def _concat(parts: list[Any]) -> Any:
    first = parts[0]
    if first is None:
        return None
    if isinstance(first, dict):
        return {k: _concat([p[k] for p in parts]) for k in first}
    if isinstance(first, (list, tuple)):
        return tuple(_concat([p[i] for p in parts]) for i in range(len(first)))
    return np.concatenate([np.asarray(p) for p in parts])


def _to_numpy(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_to_numpy(v) for v in value)
    if hasattr(value, "numpy"):
        value = value.detach().cpu() if hasattr(value, "detach") else value
        return value.numpy()
    return np.asarray(value)


def sample_batches(
    data: Any, batch_size: int | None, count: int = SAMPLE_BATCHES
) -> tuple[Any, Any, int, int]:
    """(x, y, batch_size, batches): up to ``count`` real batches of ``data``, joined, as numpy.

    ``data``: ``(x, y)`` arrays (``batch_size`` default 32), a tf.data.Dataset of batches, a
    PyDataset, or any iterable of ``(x, y)`` batches. Batches of another size than the first
    (a last, short batch) are left out: every measured step has the same shape.
    """
    if isinstance(data, tuple) and 1 <= len(data) <= 3:
        x, y = data[0], data[1] if len(data) > 1 else None
        size = int(batch_size or 32)
        rows = min(_rows(x), size * count)
        if rows < size:
            raise InputError(
                f"the backend what-if needs at least one batch of {size} samples; got {rows}"
            )
        rows -= rows % size
        return _to_numpy(_head(x, rows)), _to_numpy(_head(y, rows)), size, rows // size
    batches: list[tuple[Any, Any]] = []
    for batch in _iterate(data, count):
        x, y = _split(
            batch
            if isinstance(batch, tuple)
            else tuple(batch)
            if isinstance(batch, list)
            else batch
        )
        x, y = _to_numpy(x), _to_numpy(y)
        if batches and _rows(x) != _rows(batches[0][0]):
            continue
        batches.append((x, y))
    if not batches:
        raise InputError("the input gave no batch to measure the backends with")
    size = _rows(batches[0][0])
    return _concat([b[0] for b in batches]), _concat([b[1] for b in batches]), size, len(batches)


def _head(value: Any, rows: int) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: _head(v, rows) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_head(v, rows) for v in value)
    return value[:rows]


def _iterate(data: Any, count: int) -> Any:
    if hasattr(data, "take") and hasattr(data, "as_numpy_iterator"):  # tf.data
        yield from data.take(count).as_numpy_iterator()
        return
    if (
        hasattr(data, "__getitem__") and hasattr(data, "__len__") and hasattr(data, "on_epoch_end")
    ):  # PyDataset
        for i in range(min(count, len(data))):
            yield data[i]
        return
    try:
        iterator = iter(data)
    except TypeError:
        raise InputError(
            f"unsupported input {type(data).__name__} for the backend what-if: pass (x, y) arrays, "
            "a tf.data.Dataset, a PyDataset or an iterable of (x, y) batches"
        ) from None
    for i, batch in enumerate(iterator):
        if i >= count:
            break
        yield batch


def write_batches(path: Path, x: Any, y: Any, batch_size: int) -> None:
    """``x`` and ``y`` into one ``.npz`` with their layout (array, tuple or dict), for
    ``read_batches``."""
    arrays: dict[str, np.ndarray] = {}
    layout = {
        "x": _flatten("x", x, arrays),
        "y": _flatten("y", y, arrays),
        "batch_size": batch_size,
    }
    arrays[LAYOUT_KEY] = np.frombuffer(json.dumps(layout).encode(), dtype=np.uint8)
    np.savez(path, **arrays)  # type: ignore[arg-type]


def read_batches(path: str | os.PathLike[str]) -> tuple[list[tuple[Any, Any]], int]:
    """The batches written by ``write_batches`` (or an ``.npz`` with arrays ``x`` and ``y``
    and a given batch size, see the child) as a list of ``(x, y)`` and the batch size."""
    with np.load(path, allow_pickle=False) as found:
        arrays = {k: found[k] for k in found.files}
    layout = json.loads(arrays.pop(LAYOUT_KEY).tobytes().decode())
    size = int(layout["batch_size"])
    rows = _rows(unflatten(layout["x"], arrays, slice(None)))
    return [
        (
            unflatten(layout["x"], arrays, slice(i, i + size)),
            unflatten(layout["y"], arrays, slice(i, i + size)),
        )
        for i in range(0, rows - size + 1, size)
    ], size


def read_arrays(path: str | os.PathLike[str]) -> tuple[Any, Any, int, int]:
    """(x, y, batch size, whole batches) as ``write_batches`` wrote them, for ``fit``."""
    with np.load(path, allow_pickle=False) as found:
        arrays = {k: found[k] for k in found.files}
    layout = json.loads(arrays.pop(LAYOUT_KEY).tobytes().decode())
    size = int(layout["batch_size"])
    x = unflatten(layout["x"], arrays, slice(None))
    return x, unflatten(layout["y"], arrays, slice(None)), size, _rows(x) // size


def export(
    model: Any,
    data: Any,
    directory: Path,
    batch_size: int | None = None,
    count: int = SAMPLE_BATCHES,
    swap: dict[int, Any] | None = None,
) -> Exported:
    """Model and batches into ``directory`` (which the caller owns and removes); ``swap``: the
    portable variants of custom classes, sent in their place (``custom.write``)."""
    x, y, size, batches = sample_batches(data, batch_size, count)
    batches_path = directory / BATCHES_FILE
    write_batches(batches_path, x, y, size)
    from advisor.experiments.backends import custom

    model_path, note = export_model(model, directory)
    modules, script = custom_modules(model)
    targets = custom.collect(model)
    custom_path, why = custom.write(targets, directory, swap)
    stuck = why if why and any(custom.by_value(t) for t in targets) else None
    note = "; ".join(n for n in (note, why) if n) or None
    return Exported(
        model_path,
        batches_path,
        size,
        batches,
        modules,
        script,
        note,
        custom_path,
        custom_error=stuck,
    )


def child_path() -> str:
    """``PYTHONPATH`` for a child: the parent's own import path, so the same modules are found."""
    return os.pathsep.join(p for p in sys.path if p)


def data_from_session(data: Any) -> tuple[Any, int | None]:
    """(input, batch size) for ``sample_batches`` from what the callback learned about fit's
    input (``session.data``): the tf.data pipeline, the arrays, the PyDataset, the DataLoader,
    or a generator's first batch."""
    kind, adapter = data.kind, data.adapter
    if kind == "tf.data" and data.dataset is not None:
        return data.dataset, None
    if kind == "numpy":
        inputs = getattr(adapter, "_inputs", None)
        if inputs is not None and data.batch_size:
            import keras

            x, y, _ = keras.utils.unpack_x_y_sample_weight(inputs)
            return (x, y), int(data.batch_size)
    if kind == "pydataset":
        found = getattr(adapter, "py_dataset", None) or getattr(adapter, "_keras_sequence", None)
        if found is not None:
            return found, None
    if kind == "torch" and getattr(adapter, "_dataloader", None) is not None:
        return adapter._dataloader, None
    if kind == "generator":
        first = (getattr(adapter, "_first_batches", None) or [None])[0]
        if first is not None:
            return [first], None
    raise InputError(
        f"the backend what-if cannot reach fit's input ({kind or 'unknown'}) to sample batches from"
    )
