"""Training FLOPs per sample of a Keras model (forward + backward), for MFU.

Both methods trace one gradient step (forward, a scalar loss, gradients of every trainable
weight) with a fixed batch, and add up the FLOPs of its matrix multiplications and convolutions
(2 per multiply-add); element-wise ops and the optimizer update are left out, as the usual MFU
definition does (they are a few percent at most in models where MFU matters):

* ``tf-graph-op-count`` (TensorFlow backend): the ops of the traced graph that the gradients
  depend on (what really runs: e.g. no input gradient for the first layer), counted from their
  shapes: TensorFlow's registered statistics for MatMul / BatchMatMul / Conv2D, exact counts of
  our own for convolution back-propagation (TensorFlow's estimate uses the input size and
  over-counts "valid" convolutions), ``BatchMatMul`` with adjoints and ``Einsum``.
* ``jaxpr-op-count`` (JAX backend): the same count over the jaxpr of ``jax.grad`` of the step
  (``dot_general`` and ``conv_general_dilated``, entering nested jaxprs; a scan body counts
  ``length`` times). XLA's own cost analysis is not used: on GPU it misses convolutions. JAX
  differentiates a convolution's input as a convolution over the padded gradient, so "valid"
  convolutions count a few percent more than the algorithmic figure.
* ``torch-flop-counter`` (torch backend): ``torch.utils.flop_counter.FlopCounterMode`` around
  one forward and backward pass of a ``stateless_call`` on a random batch (the model's weights
  and state are not changed; the gradients are thrown away). It counts the same matmul and
  convolution ops, forward and backward, from the shapes torch dispatches.

On TensorFlow and JAX nothing is executed: only shapes are traced, so this costs a trace, not a
training step. On torch it costs one forward and backward pass of ``TRACE_BATCH`` samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Traced batch: big enough that per-batch constants (the loss reduction) vanish per sample.
TRACE_BATCH = 32


@dataclass(frozen=True)
class FlopsEstimate:
    flops_per_sample: float
    method: str  # tf-graph-op-count | jaxpr-op-count | torch-flop-counter
    batch: int
    by_op: dict[str, float] | None = None  # per op type, per sample (tf method)


def estimate_flops_per_sample(
    model: Any, data: Any = None, backend: str | None = None, batch: int = TRACE_BATCH
) -> FlopsEstimate | None:
    """FLOPs of one training sample, or None for a backend or model this cannot trace."""
    if backend is None:
        import keras

        backend = keras.backend.backend()
    specs = input_specs(model, data)
    if specs is None:
        return None
    if backend == "tensorflow":
        return tf_flops_per_sample(model, specs, batch)
    if backend == "jax":
        return jax_flops_per_sample(model, specs, batch)
    if backend == "torch":
        return torch_flops_per_sample(model, specs, batch)
    return None


def input_specs(model: Any, data: Any = None) -> Any:
    """A nest of (shape without batch, dtype) for the model's inputs, or None when unknown."""
    inputs = _safe(lambda: model.inputs)
    if inputs:
        specs = [(tuple(t.shape[1:]), str(_dtype_name(t.dtype))) for t in inputs]
        return specs[0] if len(specs) == 1 else specs
    dataset = getattr(data, "dataset", None) if data is not None else None
    element = getattr(dataset, "element_spec", None) if dataset is not None else None
    if element is not None:
        x = element[0] if isinstance(element, tuple) else element
        import tensorflow as tf

        return tf.nest.map_structure(lambda s: (tuple(s.shape[1:]), s.dtype.name), x)
    shapes = _safe(lambda: model._build_shapes_dict)
    if isinstance(shapes, dict) and len(shapes) == 1:
        shape = next(iter(shapes.values()))
        if isinstance(shape, (tuple, list)) and len(shape) > 1:
            return (tuple(shape[1:]), "float32")
    return None


def _dtype_name(dtype: Any) -> str:
    return getattr(dtype, "name", None) or str(dtype)


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _is_leaf(spec: Any) -> bool:
    return isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str)


def _map(fn: Any, specs: Any) -> Any:
    if _is_leaf(specs):
        return fn(specs)
    if isinstance(specs, dict):
        return {k: _map(fn, v) for k, v in specs.items()}
    return [_map(fn, s) for s in specs]


def _outputs_sum(outputs: Any) -> Any:
    """A scalar "loss": the sum of squares of every output (non-linear, so the forward pass
    stays)."""
    import keras

    total = None
    for out in keras.tree.flatten(outputs):
        value = keras.ops.cast(out, "float32")
        value = keras.ops.sum(value * value)
        total = value if total is None else total + value
    return total


# ---------------------------------------------------------------------------------------------
# TensorFlow: op count of the pruned gradient graph


def tf_flops_per_sample(model: Any, specs: Any, batch: int = TRACE_BATCH) -> FlopsEstimate:
    import tensorflow as tf

    def to_spec(leaf: tuple[tuple[Any, ...], str]) -> Any:
        shape, dtype = leaf
        if any(d is None for d in shape):
            raise ValueError(f"input shape {shape} is not fully known")
        return tf.TensorSpec((batch, *shape), tf.as_dtype(dtype))

    tf_specs = _map(to_spec, specs)
    variables = list(model.trainable_variables)

    def outputs_sum(outputs: Any) -> Any:  # TF ops only: the model may be a tf_keras one
        return tf.add_n(
            [tf.reduce_sum(tf.square(tf.cast(out, tf.float32))) for out in tf.nest.flatten(outputs)]
        )

    @tf.function(autograph=False)
    def grad_step(x: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = outputs_sum(model(x, training=True))
        return tape.gradient(loss, variables)

    concrete = grad_step.get_concrete_function(tf_specs)
    by_op = count_graph_flops(concrete.graph, [t.op for t in concrete.outputs])
    total = sum(by_op.values())
    return FlopsEstimate(
        total / batch, "tf-graph-op-count", batch, {k: v / batch for k, v in by_op.items()}
    )


DOT_OPS = frozenset(
    {
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "Einsum",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv2dNative",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "Conv3DBackpropInputV2",
        "Conv3DBackpropFilterV2",
        "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter",
    }
)


def count_graph_flops(graph: Any, targets: list[Any]) -> dict[str, float]:
    """Matmul / convolution FLOPs per op type of the ops ``targets`` depend on (no function
    bodies)."""
    from tensorflow.python.framework import ops as tf_ops
    from tensorflow.python.profiler.internal import flops_registry  # noqa: F401  (registers stats)

    needed: dict[str, Any] = {}
    stack = list(targets)
    while stack:
        op = stack.pop()
        if op.name in needed:
            continue
        needed[op.name] = op
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    from tensorflow.python.util import deprecation

    by_op: dict[str, float] = {}
    with deprecation.silence():  # the registry's shape helper logs a TF1 deprecation notice
        for op in needed.values():
            if op.type not in DOT_OPS:
                continue
            flops = _own_flops(op)
            if flops is None:
                try:
                    stat = tf_ops.get_stats_for_node_def(graph, op.node_def, "flops")
                    flops = float(stat.value) if stat.value else 0.0
                except Exception:  # op without registered statistics, or unknown shapes
                    flops = 0.0
            if flops:
                by_op[op.type] = by_op.get(op.type, 0.0) + flops
    return by_op


def _shape(tensor: Any) -> list[int] | None:
    dims = tensor.shape.as_list() if tensor.shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        return None
    return dims


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _own_flops(op: Any) -> float | None:
    """Exact counts where TensorFlow's estimate is wrong or missing."""
    kind = op.type
    if kind in (
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "Conv3DBackpropInputV2",
        "Conv3DBackpropFilterV2",
    ):
        # Same multiply-adds as the forward convolution: 2 × output elements × kernel volume × C_in.
        grad_out = _shape(op.inputs[2])
        kernel = _shape(op.inputs[1]) if "Input" in kind else _shape(op.outputs[0])
        if grad_out is None or kernel is None:
            return None
        return 2.0 * _prod(grad_out) * _prod(kernel[:-1])
    if kind in ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"):
        grad_out = _shape(op.inputs[2])
        kernel = _shape(op.inputs[1]) if "Input" in kind else _shape(op.outputs[0])
        if grad_out is None or kernel is None:
            return None
        return 2.0 * _prod(grad_out) * _prod(kernel[:2])
    if kind.startswith("BatchMatMul"):
        # TensorFlow's estimate reads "transpose_a", but these ops call it "adj_x".
        a, out = _shape(op.inputs[0]), _shape(op.outputs[0])
        if a is None or out is None:
            return None
        k = a[-2] if op.get_attr("adj_x") else a[-1]
        return 2.0 * _prod(out) * k
    if kind == "Einsum":
        return _einsum_flops(op)
    return None


def _einsum_flops(op: Any) -> float | None:
    equation = op.get_attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    equation = equation.replace(" ", "")
    if "..." in equation or "->" not in equation:
        return None
    lhs = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for term, tensor in zip(lhs, op.inputs):
        shape = _shape(tensor)
        if shape is None or len(shape) != len(term):
            return None
        sizes.update(zip(term, shape))
    if len(lhs) < 2:
        return None
    return 2.0 * _prod(list(sizes.values()))


# ---------------------------------------------------------------------------------------------
# JAX: XLA cost analysis


def jax_flops_per_sample(model: Any, specs: Any, batch: int = TRACE_BATCH) -> FlopsEstimate | None:
    import jax
    import jax.numpy as jnp

    x = _map(lambda leaf: jax.ShapeDtypeStruct((batch, *leaf[0]), jnp.dtype(leaf[1])), specs)
    trainable = [
        jax.ShapeDtypeStruct(tuple(v.shape), jnp.dtype(v.dtype)) for v in model.trainable_variables
    ]
    frozen = [
        jax.ShapeDtypeStruct(tuple(v.shape), jnp.dtype(v.dtype))
        for v in model.non_trainable_variables
    ]

    def loss(tv: Any, ntv: Any, inputs: Any) -> Any:
        outputs, _ = model.stateless_call(tv, ntv, inputs, training=True)
        return _outputs_sum(outputs)

    closed = jax.make_jaxpr(jax.grad(loss))(trainable, frozen, x)
    by_op: dict[str, float] = {}
    count_jaxpr_flops(closed.jaxpr, by_op)
    total = sum(by_op.values())
    if total <= 0:
        return None
    return FlopsEstimate(
        total / batch, "jaxpr-op-count", batch, {k: v / batch for k, v in by_op.items()}
    )


def count_jaxpr_flops(jaxpr: Any, by_op: dict[str, float], times: float = 1.0) -> None:
    """Add the dot / convolution FLOPs of a jaxpr (and the jaxprs nested in it) to ``by_op``."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            flops = (
                2.0 * _prod(list(eqn.outvars[0].aval.shape)) * _prod([lhs[d] for d in lhs_contract])
            )
            by_op[name] = by_op.get(name, 0.0) + flops * times
        elif name == "conv_general_dilated":
            rhs = eqn.invars[1].aval.shape
            spec = eqn.params["dimension_numbers"].rhs_spec  # (out features, in features, *spatial)
            per_output = rhs[spec[1]] * _prod([rhs[d] for d in spec[2:]])
            flops = 2.0 * _prod(list(eqn.outvars[0].aval.shape)) * per_output
            by_op[name] = by_op.get(name, 0.0) + flops * times
        repeat = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
        for value in eqn.params.values():
            branches = value if isinstance(value, (tuple, list)) else [value]
            inner = [
                b.jaxpr if hasattr(b, "jaxpr") and hasattr(b.jaxpr, "eqns") else b for b in branches
            ]
            inner = [j for j in inner if hasattr(j, "eqns")]
            if not inner:
                continue
            if len(inner) == 1:
                count_jaxpr_flops(inner[0], by_op, times * repeat)
            else:  # cond branches: the most expensive one
                costs = []
                for j in inner:
                    part: dict[str, float] = {}
                    count_jaxpr_flops(j, part, times * repeat)
                    costs.append(part)
                best = max(costs, key=lambda c: sum(c.values()))
                for k, v in best.items():
                    by_op[k] = by_op.get(k, 0.0) + v


# ---------------------------------------------------------------------------------------------
# torch: FlopCounterMode over one stateless forward and backward pass


def torch_flops_per_sample(
    model: Any, specs: Any, batch: int = TRACE_BATCH
) -> FlopsEstimate | None:
    import torch
    from keras.src.backend.torch.core import get_device
    from torch.utils.flop_counter import FlopCounterMode

    device = get_device()

    def make(leaf: tuple[tuple[Any, ...], str]) -> Any:
        shape, dtype = leaf
        if any(d is None for d in shape):
            raise ValueError(f"input shape {shape} is not fully known")
        torch_dtype = getattr(torch, dtype, None)
        if (
            torch_dtype is None or not torch_dtype.is_floating_point
        ):  # token ids, labels: zeros are valid
            return torch.zeros((batch, *shape), dtype=torch_dtype or torch.int64, device=device)
        return torch.rand((batch, *shape), dtype=torch_dtype, device=device)

    x = _map(make, specs)
    # Views of the weights that track gradients: no copy, and the model's own tensors stay
    # untouched.
    trainable = [v.value.detach().requires_grad_(True) for v in model.trainable_variables]
    frozen = [v.value.detach() for v in model.non_trainable_variables]
    counter = FlopCounterMode(display=False)
    with counter:
        outputs, _ = model.stateless_call(trainable, frozen, x, training=True)
        loss = _outputs_sum(outputs)
        torch.autograd.grad(
            loss, [t for t in trainable if t.is_floating_point()], allow_unused=True
        )
    by_op: dict[str, float] = {}
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = str(getattr(op, "__name__", op)).split(".")[0]
        by_op[name] = by_op.get(name, 0.0) + float(flops)
    total = sum(by_op.values())
    if total <= 0:
        return None
    return FlopsEstimate(
        total / batch, "torch-flop-counter", batch, {k: v / batch for k, v in by_op.items()}
    )
