"""Which calls tie a custom class to one Keras backend, and their ``keras.ops`` replacements.

A replacement is listed only where its semantics match for the arguments it is given: the same
positional meaning, keyword names renamed where they differ (``tf.transpose(x, perm=…)`` →
``keras.ops.transpose(x, axes=…)``). Calls whose defaults differ are left without one
(``tf.nn.gelu`` is exact, ``keras.ops.gelu`` approximate by default; ``tf.gather`` gathers along
axis 0, ``keras.ops.take`` flattens; ``torch.max(x, dim)`` returns indices too; ``tf.shape`` is a
tensor, ``keras.ops.shape`` a tuple).
"""

from __future__ import annotations

from dataclasses import dataclass, field

BACKENDS = ("tensorflow", "jax", "torch")
# the framework a canonical dotted name belongs to, by its first part
FRAMEWORKS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


@dataclass(frozen=True)
class Replacement:
    """``keras.ops.<name>`` for a backend call; ``renames`` maps its keyword names to Keras's;
    ``positional``: at most this many positional arguments keep their meaning (None: any)."""

    target: str
    renames: dict[str, str] = field(default_factory=dict)
    positional: int | None = None


def _same(prefix: str, names: str, target_prefix: str = "keras.ops.") -> dict[str, Replacement]:
    return {f"{prefix}{n}": Replacement(f"{target_prefix}{n}") for n in names.split()}


def _to(prefix: str, pairs: dict[str, str]) -> dict[str, Replacement]:
    return {f"{prefix}{k}": Replacement(f"keras.ops.{v}") for k, v in pairs.items()}


_TF_ELEMENTWISE = "abs exp sqrt square sign floor ceil maximum minimum add subtract multiply"
_TF_MATH = f"{_TF_ELEMENTWISE} log log1p rsqrt reciprocal erf tanh sigmoid divide"
_TF_REDUCE = {"reduce_mean": "mean", "reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min"}
_TF_REDUCE |= {"reduce_prod": "prod", "reduce_any": "any", "reduce_all": "all"}
_TF_REDUCE |= {"reduce_logsumexp": "logsumexp"}
_REDUCTIONS = ("mean", "sum", "prod", "var", "std")  # numpy's third positional is dtype or ddof
_NUMPY_LIKE = (
    "abs exp log log1p sqrt square sign floor ceil maximum minimum add subtract multiply divide "
    "tanh mean sum prod matmul dot reshape concatenate stack expand_dims squeeze zeros_like "
    "ones_like zeros ones arange where clip einsum power tensordot cumsum cumprod var std tile "
    "transpose swapaxes moveaxis flip sort argsort repeat"
)

REPLACEMENTS: dict[str, Replacement] = {
    # TensorFlow
    **_same("tensorflow.nn.", "relu relu6 sigmoid softmax log_softmax silu elu selu softplus"),
    "tensorflow.nn.swish": Replacement("keras.ops.silu"),
    "tensorflow.nn.tanh": Replacement("keras.ops.tanh"),
    **_same("tensorflow.", _TF_ELEMENTWISE + " tanh sigmoid einsum stop_gradient tensordot"),
    **_same("tensorflow.math.", _TF_MATH + " softplus"),
    "tensorflow.pow": Replacement("keras.ops.power"),
    "tensorflow.math.pow": Replacement("keras.ops.power"),
    "tensorflow.divide": Replacement("keras.ops.divide"),
    **_to("tensorflow.", _TF_REDUCE),
    **_to("tensorflow.math.", _TF_REDUCE),
    "tensorflow.matmul": Replacement("keras.ops.matmul", positional=2),
    "tensorflow.linalg.matmul": Replacement("keras.ops.matmul", positional=2),
    "tensorflow.concat": Replacement("keras.ops.concatenate", {"values": "xs"}),
    "tensorflow.stack": Replacement("keras.ops.stack", {"values": "x"}),
    "tensorflow.reshape": Replacement("keras.ops.reshape", {"tensor": "x", "shape": "newshape"}),
    "tensorflow.transpose": Replacement("keras.ops.transpose", {"a": "x", "perm": "axes"}, 2),
    "tensorflow.expand_dims": Replacement("keras.ops.expand_dims", {"input": "x"}),
    "tensorflow.squeeze": Replacement("keras.ops.squeeze", {"input": "x"}),
    "tensorflow.zeros_like": Replacement("keras.ops.zeros_like", {"input": "x"}),
    "tensorflow.ones_like": Replacement("keras.ops.ones_like", {"input": "x"}),
    "tensorflow.where": Replacement("keras.ops.where", {"x": "x1", "y": "x2"}),
    "tensorflow.clip_by_value": Replacement(
        "keras.ops.clip", {"t": "x", "clip_value_min": "x_min", "clip_value_max": "x_max"}
    ),
    "tensorflow.cast": Replacement("keras.ops.cast", {"dtype": "dtype"}),
    "tensorflow.constant": Replacement("keras.ops.convert_to_tensor", {"value": "x"}, 2),
    "tensorflow.convert_to_tensor": Replacement("keras.ops.convert_to_tensor", {"value": "x"}, 2),
    "tensorflow.range": Replacement("keras.ops.arange", {"limit": "stop", "delta": "step"}, 3),
    "tensorflow.one_hot": Replacement("keras.ops.one_hot", {"depth": "num_classes"}, 2),
    "tensorflow.math.top_k": Replacement("keras.ops.top_k", {"input": "x"}),
    "tensorflow.image.resize": Replacement("keras.ops.image.resize", {"method": "interpolation"}),
    "tensorflow.Variable": Replacement("keras.Variable", {"initial_value": "initializer"}, 1),
    # JAX
    **_same("jax.numpy.", _NUMPY_LIKE),
    **{f"jax.numpy.{n}": Replacement(f"keras.ops.{n}", positional=2) for n in _REDUCTIONS},
    **_same("jax.nn.", "relu relu6 sigmoid softmax log_softmax silu gelu elu selu softplus"),
    "jax.lax.stop_gradient": Replacement("keras.ops.stop_gradient"),
    # torch
    **_same("torch.", "relu sigmoid tanh exp log sqrt abs square sign floor ceil matmul einsum"),
    **_same("torch.nn.functional.", "relu relu6 sigmoid silu elu selu softplus"),
    "torch.cat": Replacement("keras.ops.concatenate", {"tensors": "xs", "dim": "axis"}, 2),
    "torch.stack": Replacement("keras.ops.stack", {"tensors": "x", "dim": "axis"}, 2),
    "torch.reshape": Replacement("keras.ops.reshape", {"input": "x", "shape": "newshape"}, 2),
    "torch.transpose": Replacement("keras.ops.swapaxes", {"input": "x", "dim0": "axis1"}, 3),
    "torch.softmax": Replacement("keras.ops.softmax", {"input": "x", "dim": "axis"}, 2),
    "torch.nn.functional.softmax": Replacement(
        "keras.ops.softmax", {"input": "x", "dim": "axis"}, 2
    ),
    "torch.clamp": Replacement("keras.ops.clip", {"input": "x", "min": "x_min", "max": "x_max"}, 3),
    "torch.where": Replacement("keras.ops.where", {"input": "x1", "other": "x2"}, 3),
    "torch.zeros_like": Replacement("keras.ops.zeros_like", {"input": "x"}, 1),
    "torch.ones_like": Replacement("keras.ops.ones_like", {"input": "x"}, 1),
}

# dtype attributes, replaced by Keras's dtype names
_DTYPES = "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool"
CONSTANTS: dict[str, str] = {
    **{f"tensorflow.{d}": repr(d) for d in _DTYPES.split()},
    **{f"jax.numpy.{d}": repr(d) for d in _DTYPES.split()},
    **{f"torch.{d}": repr(d) for d in _DTYPES.split()},
}

# calls that have no replacement but deserve a word on what to do instead
ADVICE: dict[str, str] = {
    "tensorflow.GradientTape": "a train_step written for TensorFlow: write one per backend, or "
    "keep the loss in compute_loss and let Keras's own train_step differentiate",
    "jax.grad": "a train_step written for JAX: write one per backend, or use compute_loss",
    "jax.value_and_grad": "a train_step written for JAX: write one per backend, or use "
    "compute_loss",
    "torch.autograd": "a train_step written for torch: write one per backend, or use compute_loss",
    "tensorflow.py_function": "Python run inside the graph: write the function with keras.ops",
    "tensorflow.numpy_function": "Python run inside the graph: write the function with keras.ops",
    "tensorflow.print": "prints inside a TensorFlow graph: no keras.ops equivalent; drop it",
    "tensorflow.nn.gelu": "keras.ops.gelu(x, approximate=False) matches tf.nn.gelu's default",
}
# prefixes that are not a backend lock: Keras itself reached through a backend's namespace
NOT_LOCKED = ("tensorflow.keras", "tensorflow.python.keras")
# methods whose effect is Python-side: they run once, while the step is traced (or break it)
SIDE_EFFECTS = {
    "print": "runs once, while the step is traced (TensorFlow, JAX, torch.compile), not at "
    "every step",
    "numpy": ".numpy() needs a concrete tensor: it fails inside a traced step and on a tensor "
    "that requires grad",
    "append": "appends a traced value to a Python list once, at tracing, not at every step",
}
