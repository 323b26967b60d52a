"""Training FLOPs per sample of what a custom loop trains (``advisor.track(model=...)``).

A custom loop hands the advisor the thing it trains; the count is the same as a Keras fit's
(``probes/flops.py``): the matrix multiplications and convolutions of one training step, forward
and backward, 2 FLOPs per multiply-add, element-wise ops and the optimizer left out.

* a **Keras model**: ``probes/flops.py`` on the model's backend, with the input shapes from the
  built model, else from ``sample``;
* a **torch** ``nn.Module``: ``torch.utils.flop_counter.FlopCounterMode`` around one forward and
  backward pass on ``sample`` (one batch of inputs, its first dimension the batch), through
  ``torch.func.functional_call`` on detached weights and copied buffers: the module's weights,
  gradients and running statistics stay as they were;
* a **JAX** step function (``jax.jit(step)``): the ``dot_general`` and ``conv_general_dilated``
  ops of its jaxpr traced on ``sample`` (the step's arguments for one batch), divided by the
  loop's batch size. Only shapes are traced; nothing runs. XLA's ``cost_analysis()`` is not
  used: it counts element-wise work too (the ceiling it is held against is a matmul rate) and
  misses convolutions on GPU.

Each function returns the estimate and the compute dtype (a Keras policy name or a dtype name).
"""

from __future__ import annotations

import sys
from typing import Any

from advisor.probes.flops import FlopsEstimate, count_jaxpr_flops

KINDS = ("keras", "torch", "jax")


def model_kind(model: Any) -> str | None:
    """``keras``, ``torch`` or ``jax`` (a jitted step), or None for anything else. Looks only at
    modules already imported."""
    keras = sys.modules.get("keras")
    if keras is not None and isinstance(model, keras.Model):
        return "keras"
    if type(model).__module__.split(".")[0] == "tf_keras":
        return "keras"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(model, torch.nn.Module):
        return "torch"
    if "jax" in sys.modules and callable(model) and hasattr(model, "lower"):
        return "jax"
    return None


def count_loop_flops(
    model: Any, sample: Any, batch_size: int | None
) -> tuple[FlopsEstimate, str | None]:
    """(FLOPs per training sample, compute dtype) of ``model``; raises when it cannot count."""
    kind = model_kind(model)
    if kind == "keras":
        return keras_model_flops(model, sample)
    if kind == "torch":
        return torch_module_flops(model, sample)
    if kind == "jax":
        if not batch_size:
            raise ValueError("a JAX step's FLOPs are per step: pass batch_size= to divide them")
        return jax_step_flops(model, sample, batch_size)
    raise TypeError(f"cannot count the FLOPs of a {type(model).__name__}")


def keras_model_flops(model: Any, sample: Any) -> tuple[FlopsEstimate, str | None]:
    from advisor.probes import flops

    specs = flops.input_specs(model)
    if specs is None and sample is not None:
        specs = _keras_specs(sample)
    if specs is None:
        raise ValueError("the Keras model is not built: pass sample= (one batch of its inputs)")
    keras = sys.modules.get("keras")
    legacy = type(model).__module__.split(".")[0] == "tf_keras"
    backend = "tensorflow" if legacy or keras is None else keras.backend.backend()
    count = {
        "tensorflow": flops.tf_flops_per_sample,
        "jax": flops.jax_flops_per_sample,
        "torch": flops.torch_flops_per_sample,
    }.get(backend)
    if count is None:
        raise ValueError(f"no FLOP count for the Keras backend {backend!r}")
    estimate = count(model, specs)
    if estimate is None:
        raise ValueError("the traced step has no matmul or convolution")
    policy = getattr(getattr(model, "dtype_policy", None), "name", None)
    return estimate, policy


def _keras_specs(sample: Any) -> Any:
    """(shape without batch, dtype) of each input of ``sample``: an array or a list of them."""

    def spec(x: Any) -> tuple[tuple[int, ...], str]:
        dtype = getattr(x.dtype, "name", None) or str(x.dtype).removeprefix("torch.")
        return tuple(int(d) for d in x.shape[1:]), dtype

    if isinstance(sample, (list, tuple)):
        return [spec(x) for x in sample]
    if isinstance(sample, dict):
        return {k: spec(v) for k, v in sample.items()}
    return spec(sample)


def torch_module_flops(module: Any, sample: Any) -> tuple[FlopsEstimate, str | None]:
    import torch
    from torch.func import functional_call
    from torch.utils.flop_counter import FlopCounterMode

    if sample is None:
        raise ValueError("a torch module's FLOPs need sample= (one batch of its inputs)")
    args, kwargs = _call_args(sample)
    batch = _batch_of(sample)
    params = {n: p.detach().requires_grad_(p.requires_grad) for n, p in module.named_parameters()}
    buffers = {n: b.clone() for n, b in module.named_buffers()}  # running statistics stay
    weights = [p for p in params.values() if p.requires_grad]
    counter = FlopCounterMode(display=False)
    with torch.enable_grad(), counter:
        outputs = functional_call(module, {**params, **buffers}, args, kwargs)
        loss = sum(
            (t.float() * t.float()).sum() for t in _tensors(outputs) if t.is_floating_point()
        )
        if weights and isinstance(loss, torch.Tensor) and loss.requires_grad:
            torch.autograd.grad(loss, weights, allow_unused=True)
    by_op: dict[str, float] = {}
    for op, value in counter.get_flop_counts().get("Global", {}).items():
        name = str(getattr(op, "__name__", op)).split(".")[0]
        by_op[name] = by_op.get(name, 0.0) + float(value) / batch
    total = sum(by_op.values())
    if total <= 0:
        raise ValueError("the module's forward and backward pass has no matmul or convolution")
    dtype = next((str(p.dtype) for p in params.values() if p.is_floating_point()), None)
    return FlopsEstimate(total, "torch-flop-counter", batch, by_op), _dtype_name(dtype)


def jax_step_flops(step: Any, sample: Any, batch_size: int) -> tuple[FlopsEstimate, str | None]:
    import jax

    if sample is None:
        raise ValueError("a JAX step's FLOPs need sample= (the step's arguments, as a tuple)")
    args = sample if isinstance(sample, tuple) else (sample,)
    trace = getattr(step, "trace", None)
    closed = trace(*args).jaxpr if trace is not None else jax.make_jaxpr(step)(*args)
    by_op: dict[str, float] = {}
    count_jaxpr_flops(closed.jaxpr, by_op)
    total = sum(by_op.values())
    if total <= 0:
        raise ValueError("the step's jaxpr has no matmul or convolution")
    dtype = next(
        (
            str(leaf.dtype)
            for leaf in jax.tree_util.tree_leaves(args)
            if hasattr(leaf, "dtype") and jax.numpy.issubdtype(leaf.dtype, jax.numpy.floating)
        ),
        None,
    )
    per_sample = {k: v / batch_size for k, v in by_op.items()}
    return FlopsEstimate(total / batch_size, "jaxpr-op-count", batch_size, per_sample), dtype


def _call_args(sample: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A tuple or list is the positional inputs, a dict the keyword inputs, else one input."""
    if isinstance(sample, (tuple, list)):
        return tuple(sample), {}
    if isinstance(sample, dict):
        return (), dict(sample)
    return (sample,), {}


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _batch_of(sample: Any) -> int:
    tensors = _tensors(sample)
    if not tensors or tensors[0].dim() == 0 or tensors[0].shape[0] < 1:
        raise ValueError("sample= needs a tensor whose first dimension is the batch")
    return int(tensors[0].shape[0])


def _dtype_name(dtype: str | None) -> str | None:
    return dtype.removeprefix("torch.") if dtype else None
