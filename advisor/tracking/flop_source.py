"""What a custom loop gives for its speed of light: ``advisor.track(model=..., sample=...)`` or
``flops_per_sample=`` (docs/speed-of-light.md).

The arguments are checked when the run is created (a wrong combination is a usage error, before
the loop runs); the FLOPs are counted once, at the loop's end, by the ``speed_of_light``
collector, which records a failure as ``speed_of_light.error`` and lets the loop end normally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.errors import UsageError

TAKES = (
    "model= takes a Keras model, a torch nn.Module or a jax.jit-ed step function "
    "(with the framework imported)"
)


@dataclass(frozen=True)
class FlopSource:
    """The loop's model (and one batch of its inputs), or its FLOPs per sample given outright."""

    model: Any = None
    sample: Any = None
    flops_per_sample: float | None = None

    @classmethod
    def of(
        cls, model: Any, sample: Any, flops_per_sample: float | None, batch_size: int | None
    ) -> FlopSource | None:
        """The source, or None when the loop gives none; a usage error for a wrong combination."""
        from advisor.probes.loop_flops import model_kind

        if flops_per_sample is not None:
            if (
                isinstance(flops_per_sample, bool)
                or not isinstance(flops_per_sample, (int, float))
                or not math.isfinite(flops_per_sample)
                or flops_per_sample <= 0
            ):
                raise UsageError(
                    f"flops_per_sample must be a positive number, got {flops_per_sample!r}"
                )
        if model is None:
            if sample is not None:
                raise UsageError("sample= is an input batch for model=; pass model= too")
            return cls(flops_per_sample=flops_per_sample) if flops_per_sample else None
        kind = model_kind(model)
        if kind is None:
            raise UsageError(f"{TAKES}, got a {type(model).__name__}")
        if flops_per_sample is None and kind in ("torch", "jax") and sample is None:
            what = "one batch of its inputs" if kind == "torch" else "the step's arguments"
            raise UsageError(
                f"a {kind} model= needs sample= ({what}) to count its FLOPs, "
                "or pass flops_per_sample="
            )
        if flops_per_sample is None and kind == "jax" and not batch_size:
            raise UsageError("a JAX step's FLOPs are per step: pass batch_size= too")
        return cls(model, sample, flops_per_sample)

    def count(self, batch_size: int | None) -> tuple[dict[str, Any], str | None]:
        """(the run's ``model.flops_*`` values, the compute dtype if known); raises when counting
        fails. A number given outright wins over counting; the model then gives the dtype only."""
        from advisor.probes.loop_flops import count_loop_flops, model_kind

        if self.flops_per_sample is not None:
            dtype = _dtype_of(self.model) if model_kind(self.model) else None
            given = {"model.flops_per_sample": float(self.flops_per_sample)}
            return {**given, "model.flops_method": "given"}, dtype
        estimate, dtype = count_loop_flops(self.model, self.sample, batch_size)
        counted = {"model.flops_per_sample": estimate.flops_per_sample}
        return {**counted, "model.flops_method": estimate.method}, dtype


def _dtype_of(model: Any) -> str | None:
    """The model's compute dtype without counting: a Keras policy or the first floating weight's
    dtype of a torch module (None for a JAX step)."""
    policy = getattr(getattr(model, "dtype_policy", None), "name", None)
    if policy:
        return str(policy)
    parameters = getattr(model, "parameters", None)
    if callable(parameters):
        for p in parameters():
            if p.is_floating_point():
                return str(p.dtype).removeprefix("torch.")
    return None
