"""The shapes of the first few batches a tf.data dataset yields, read beside the training.

A dataset's element spec may leave a dimension open (``None``) that every batch fills the same
way: ``keras.utils.timeseries_dataset_from_array`` gives windows of ``(None, None, features)``
although every window has ``sequence_length`` steps. To tell such a spec from input that really
changes shape, :class:`BatchShapes` reads the first ``batches`` elements of a fresh iterator of
the dataset on a thread of its own — at train begin, once, and only when the spec has open
dimensions — and keeps their shapes. The training's own iterator is not touched; the cost is
producing those few batches once more.
"""

from __future__ import annotations

import threading
from typing import Any

SHAPE_BATCHES = 8  # batches read: enough to see buckets or padded lengths change


class BatchShapes:
    """Reads the shapes of a dataset's first batches on a daemon thread; never raises."""

    def __init__(self, dataset: Any, batches: int = SHAPE_BATCHES) -> None:
        self.shapes: list[list[list[int | None]]] = []  # per batch, per component
        self.error: str | None = None
        self._dataset = dataset
        self._batches = batches
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, name="advisor-batch-shapes", daemon=True)

    def start(self) -> BatchShapes:
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the reading to end; True when it has."""
        return self._done.wait(seconds)

    def _read(self) -> None:
        try:
            import tensorflow as tf

            for element in self._dataset.take(self._batches):
                self.shapes.append([component_shape(t) for t in tf.nest.flatten(element)])
        except Exception as exc:  # noqa: BLE001 — a dataset that cannot be read twice: no shapes
            self.error = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            self._dataset = None
            self._done.set()


def component_shape(tensor: Any) -> list[int | None]:
    """A tensor's shape as a list (None for a ragged dimension)."""
    shape = getattr(tensor, "shape", None)
    if shape is None or getattr(shape, "rank", 0) is None:
        return []
    return [None if d is None else int(d) for d in list(shape)]
