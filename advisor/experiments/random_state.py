"""The process-wide random generators a baseline may advance, saved and put back exactly.

The baseline trains and iterates the input many times. Whatever draws from a global generator
while it runs — a PyDataset's ``np.random`` augmentation, a torch ``DataLoader``'s shuffling
sampler, Python's ``random``, Keras's global seed generator, TensorFlow's op-seed sequence —
would leave the job in a different random state than without the advisor, and a seeded,
reproducible training script would no longer reproduce. :class:`GlobalRandomState` captures
them before and restores them after. Only libraries already imported are touched: nothing here
imports a framework.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import Any


def _numpy() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    np = sys.modules.get("numpy")
    if np is None:
        return None
    return np.random.get_state, np.random.set_state


def _torch() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "get_rng_state"):
        return None
    return torch.get_rng_state, torch.set_rng_state


def _tf_op_seeds() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    """TensorFlow draws the seed of every random op created without one from a Python ``Random``
    seeded by ``tf.random.set_seed``; the baseline's datasets create ops and advance it."""
    if "tensorflow" not in sys.modules:
        return None
    try:
        from tensorflow.python.eager import context

        ctx = context.context()
    except Exception:  # noqa: BLE001 — a TensorFlow without this internal: nothing to restore
        return None
    if getattr(ctx, "_rng", None) is None:
        return None

    def get() -> Any:
        return ctx._rng.getstate() if ctx._rng is not None else None

    def put(state: Any) -> None:
        if state is not None and ctx._rng is not None:
            ctx._rng.setstate(state)

    return get, put


def _keras_global_seeds() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    """Keras 3's global seed generator (``keras.random.*`` calls without a seed), once created."""
    module = sys.modules.get("keras.src.random.seed_generator")
    if module is None:
        return None
    try:
        from keras.src.backend.common import global_state

        generator = global_state.get_global_attribute("global_seed_generator")
    except Exception:  # noqa: BLE001 — another Keras layout: nothing to restore
        return None
    state = getattr(generator, "state", None)
    if state is None:
        return None

    def get() -> Any:
        import numpy as np

        return np.array(state.numpy() if hasattr(state, "numpy") else state.value, copy=True)

    return get, state.assign


SOURCES: dict[str, Callable[[], tuple[Callable[[], Any], Callable[[Any], None]] | None]] = {
    "python": lambda: (random.getstate, random.setstate),
    "numpy": _numpy,
    "torch": _torch,
    "tensorflow-op-seeds": _tf_op_seeds,
    "keras-global-seed": _keras_global_seeds,
}


class GlobalRandomState:
    """A snapshot of every loaded global random generator; :meth:`restore` puts them back."""

    def __init__(self) -> None:
        self.saved: list[tuple[str, Callable[[Any], None], Any]] = []
        for name, source in SOURCES.items():
            try:
                pair = source()
                if pair is not None:
                    get, put = pair
                    self.saved.append((name, put, get()))
            except Exception:  # noqa: BLE001, S112 — a generator we cannot read is left alone
                continue

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.saved]

    def restore(self) -> None:
        for _, put, value in self.saved:
            try:
                put(value)
            except Exception:  # noqa: BLE001, S112 — never fail the job over a random state
                continue
