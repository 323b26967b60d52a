"""Exact save and restore of a model's training state around a baseline.

The baseline trains the user's own model (same compiled step, no second copy on the accelerator)
and then puts everything back bit for bit: weights, non-trainable state (BatchNorm statistics,
RNG seeds), metric accumulators and every optimizer variable (iterations, moments, loss scale).
The attributes ``fit`` sets on the model (``history``, ``stop_training``) are restored as well.
"""

from __future__ import annotations

from typing import Any

_FIT_ATTRIBUTES = ("history", "stop_training", "_eval_epoch_iterator")
_MISSING = object()


def _variables(obj: Any, name: str) -> list[Any]:
    value = getattr(obj, name, None)
    if callable(value):  # tf_keras optimizers: variables()
        try:
            value = value()
        except Exception:
            return []
    return list(value or [])


def training_variables(model: Any) -> list[Any]:
    """Every variable a training step can change, each once."""
    out: list[Any] = []
    seen: set[int] = set()
    optimizer = getattr(model, "optimizer", None)
    groups = [_variables(model, "variables"), _variables(model, "metrics_variables")]
    for metric in getattr(model, "metrics", None) or []:
        groups.append(_variables(metric, "variables"))
    if optimizer is not None:
        groups.append(_variables(optimizer, "variables"))
    for group in groups:
        for var in group:
            if id(var) not in seen:
                seen.add(id(var))
                out.append(var)
    return out


def _value(var: Any) -> Any:
    import numpy as np

    if hasattr(var, "numpy"):
        return np.array(var.numpy(), copy=True)
    import keras

    return np.array(keras.ops.convert_to_numpy(var), copy=True)


class ModelState:
    """A snapshot of a model's training state, restorable exactly."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.variables = training_variables(model)
        self.values = [_value(v) for v in self.variables]
        self.attributes = {name: model.__dict__.get(name, _MISSING) for name in _FIT_ATTRIBUTES}

    def restore(self) -> None:
        for var, value in zip(self.variables, self.values):
            var.assign(value)
        for name, value in self.attributes.items():
            try:
                if value is _MISSING:
                    if name in self.model.__dict__:
                        delattr(self.model, name)
                else:
                    setattr(self.model, name, value)
            except Exception:
                continue

    def unchanged(self) -> bool:
        """True when every captured variable still holds its captured value (bit for bit)."""
        import numpy as np

        return all(
            np.array_equal(_value(v), value, equal_nan=value.dtype.kind == "f")
            for v, value in zip(self.variables, self.values)
        )


def ensure_built(model: Any, first_batch: Any) -> None:
    """Build the model and its optimizer before a snapshot, so that nothing is created during the
    baseline that the snapshot does not cover."""
    if not getattr(model, "built", True):
        x = first_batch[0] if isinstance(first_batch, tuple) else first_batch
        model(x)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and hasattr(optimizer, "built") and not optimizer.built:
        optimizer.build(model.trainable_variables)
