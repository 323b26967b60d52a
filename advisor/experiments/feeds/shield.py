"""A PyDataset that reads the user's batches without running the user's epoch hooks.

Keras calls ``on_epoch_begin`` / ``on_epoch_end`` of the PyDataset it trains on; a user's
dataset often reshuffles its index there. The baseline trains and iterates many short epochs,
so it reads through this shield: the same batches with the same ``workers``,
``use_multiprocessing`` and ``max_queue_size`` (what makes a PyDataset fast or slow), and the
user's dataset left in the state the fit left it. A module of its own because it subclasses
Keras's class at import time (it is imported only when a baseline measures a PyDataset).
"""

from __future__ import annotations

from typing import Any

import keras


class ShieldedPyDataset(keras.utils.PyDataset):  # type: ignore[misc]
    """Batches of ``inner`` by index; epoch hooks do nothing."""

    def __init__(self, inner: Any) -> None:
        super().__init__(
            workers=getattr(inner, "workers", 1),
            use_multiprocessing=getattr(inner, "use_multiprocessing", False),
            max_queue_size=getattr(inner, "max_queue_size", 10),
        )
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)

    @property
    def num_batches(self) -> int | None:
        return getattr(self.inner, "num_batches", None)

    def __getitem__(self, index: int) -> Any:
        return self.inner[index]

    def on_epoch_begin(self) -> None:
        return None

    def on_epoch_end(self) -> None:
        return None
