"""Context: what can be introspected at train begin (framework, strategy, batch, precision...)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from advisor.collectors.collector import Collector
from advisor.probes.framework import device_kind, dtype_policy_of
from advisor.store.schema import ContextRecord

_EARLY_STOPPING = ("EarlyStopping",)
_TRACKING = (
    "TensorBoard",
    "CSVLogger",
    "MLflowCallback",
    "MlflowCallback",
    "WandbCallback",
    "WandbMetricsLogger",
    "CometCallback",
    "NeptuneCallback",
    "ClearMLCallback",
)
_TUNER_MODULES = ("keras_tuner", "optuna", "ray.tune", "kerastuner")


class ContextCollector(Collector):
    name = "context"

    def on_train_begin(self) -> None:
        values = introspect(self.session)
        self.session.writer.write(ContextRecord(t=time.time(), values=values))
        self.session.notes.context = values
        manifest_fields = {
            "strategy": values.get("context.strategy"),
            "replicas": values.get("context.replicas"),
            "global_batch_size": values.get("context.global_batch_size"),
            "per_replica_batch_size": values.get("context.per_replica_batch_size"),
            "steps_per_execution": values.get("context.steps_per_execution"),
            "dtype_policy": values.get("context.dtype_policy"),
            "jit_compile": values.get("context.jit_compile"),
        }
        self.session.writer.update_manifest(
            **{k: v for k, v in manifest_fields.items() if v is not None}
        )

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None) -> None:
        retraces = _retraces(self.session.model)
        if retraces is not None and retraces != self.session.notes.graph_retraces:
            self.session.notes.graph_retraces = retraces
            self.session.writer.write(
                ContextRecord(
                    t=time.time(),
                    values={**self.session.notes.context, "context.graph_retraces": retraces},
                )
            )


def introspect(session: Any) -> dict[str, Any]:
    model = session.model
    v: dict[str, Any] = {}
    v["context.backend"] = session.backend
    v["context.legacy_keras"] = session.keras_flavor == "tf_keras"
    v["context.framework"] = session.keras_flavor
    device, count = device_kind(session.backend)
    v["context.device"] = device
    v["context.device_count"] = count
    strategy_name, replicas = _strategy(model, session)
    v["context.strategy"] = strategy_name
    v["context.replicas"] = replicas
    v["context.num_workers"] = session.num_workers
    batch = session.data.batch_size
    workers = max(1, int(session.num_workers or 1))
    if batch and _feeds_local_share(strategy_name, workers):
        # Horovod and JAX multi-process: each process feeds its own share of the global batch.
        v["context.global_batch_size"] = batch * workers
        local_replicas = max(1, (replicas or workers) // workers)
        v["context.per_replica_batch_size"] = batch // local_replicas
    else:
        # tf.distribute and single-process jobs: fit sees the global batch.
        v["context.global_batch_size"] = batch
        if batch and replicas:
            v["context.per_replica_batch_size"] = batch // replicas
    v["context.steps_per_execution"] = session.steps_per_execution
    policy = dtype_policy_of(model)
    v["context.dtype_policy"] = policy
    if policy:
        v["context.mixed_precision"] = "16" in policy
    jit = _safe(lambda: model.jit_compile)
    v["context.jit_compile"] = (
        bool(jit) if jit is not None else (False if session.keras_flavor == "tf_keras" else None)
    )
    v["context.jit_compile_default"] = _jit_default(model, session.keras_flavor)
    eager = getattr(model, "run_eagerly", None)
    v["context.run_eagerly"] = bool(eager) if eager is not None else None
    names = [type(cb).__name__ for cb in session.fit_callbacks]
    names = [n for n in names if n not in ("History", "ProgbarLogger")]
    v["context.callbacks"] = names
    v["context.early_stopping"] = any(n in _EARLY_STOPPING for n in names)
    v["context.tracking"] = any(n in _TRACKING for n in names) or bool(
        getattr(session.options, "mlflow", False)
    )
    v["context.tuner"] = any(m in sys.modules for m in _TUNER_MODULES)
    profiling = session.options.profile_steps is not None
    for cb in session.fit_callbacks:
        if type(cb).__name__ == "TensorBoard" and _tb_profiles(cb):
            profiling = True
    v["context.profiling_configured"] = profiling
    conv = [layer for layer in _layers(model) if "Conv" in type(layer).__name__]
    v["context.conv_layers"] = len(conv)
    v["context.conv_channels_first"] = any(
        getattr(layer, "data_format", "") == "channels_first" for layer in conv
    )
    try:
        v["context.params"] = int(sum(_size(w) for w in model.trainable_weights))
    except Exception:
        pass
    v["context.input_kind"] = session.data.kind
    v["context.host_cpu_count"] = os.cpu_count()
    v["throughput.logging"] = session.notes.logging
    v["context.optimizer"] = type(getattr(model, "optimizer", None)).__name__
    v["context.horovod_compression"] = horovod_compression(getattr(model, "optimizer", None))
    v.update(_model_contents(model))
    return {k: val for k, val in v.items() if val is not None}


def _model_contents(model: Any) -> dict[str, Any]:
    """The model's preprocessing layers and custom objects (``advisor.probes.model_layers``);
    nothing when the model cannot be read."""
    from advisor.probes.model_layers import read_model

    try:
        return read_model(model)
    except Exception:  # noqa: BLE001 — an unusual model: its contents stay unknown
        return {}


def horovod_compression(optimizer: Any) -> str | None:
    """The gradient compression of a Horovod ``DistributedOptimizer`` (``none``, ``fp16``…),
    else None.

    Horovod's torch and TF1 wrappers keep the compressor class in ``_compression``; its Keras
    wrapper keeps it only in the closure of the class it makes (``__init__``) and of its
    ``_allreduce_grads`` function. The compressor is ``NoneCompressor``, ``FP16Compressor`` or a
    user's subclass of Horovod's ``Compressor``; a loss-scale wrapper holds the optimizer inside.
    """
    for opt in (
        optimizer,
        getattr(optimizer, "inner_optimizer", None),
        getattr(optimizer, "_optimizer", None),
    ):
        if opt is None:
            continue
        candidates = [
            getattr(opt, "_compression", None),
            _free_variable(getattr(type(opt), "__init__", None), "compression"),
            _free_variable(getattr(opt, "_allreduce_grads", None), "compression"),
        ]
        for compressor in candidates:
            cls = compressor if isinstance(compressor, type) else type(compressor)
            if compressor is not None and any(
                c.__module__.startswith("horovod") for c in cls.__mro__
            ):
                return cls.__name__.removesuffix("Compressor").lower() or "custom"
    return None


def _free_variable(fn: Any, name: str, depth: int = 3) -> Any:
    """The value of free variable ``name`` in ``fn``'s closure, or in the closures it holds."""
    todo, seen = [(fn, 0)], set()
    while todo:
        obj, level = todo.pop()
        obj = getattr(obj, "python_function", obj)  # a tf.function: the Python function it wraps
        code = getattr(obj, "__code__", None)
        if code is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        for var, cell in zip(code.co_freevars, getattr(obj, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if var == name:
                return value
            if level < depth and callable(value):
                todo.append((value, level + 1))
    return None


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _jit_default(model: Any, flavor: str) -> bool | None:
    """What ``jit_compile`` is when left at its default for this model, backend and machine.

    Keras 3's ``"auto"``: on on JAX, off on torch, on for TensorFlow only with an accelerator and
    no tf.distribute strategy, and never for a model with layers XLA cannot compile. tf_keras:
    off unless asked for.
    """
    if flavor == "tf_keras":
        return False
    resolve = getattr(model, "_resolve_auto_jit_compile", None)
    value = _safe(resolve) if resolve is not None else None
    return bool(value) if value is not None else None


def _feeds_local_share(strategy: str | None, workers: int) -> bool:
    return workers > 1 and (strategy == "Horovod" or strategy in ("DataParallel", "ModelParallel"))


def _horovod_size() -> int | None:
    """Horovod's world size when Horovod is imported and initialised, else from horovodrun's env."""
    for name in (
        "horovod.tensorflow.keras",
        "horovod.keras",
        "horovod.tensorflow",
        "horovod.torch",
    ):
        module = sys.modules.get(name)
        if module is not None:
            try:
                return int(module.size())
            except Exception:
                continue
    size = os.environ.get("HOROVOD_SIZE")
    return int(size) if size and size.isdigit() else None


def _strategy(model: Any, session: Any) -> tuple[str | None, int | None]:
    hvd = session.notes.horovod_size or _horovod_size()
    if hvd:
        return "Horovod", int(hvd)
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is not None:
        name = type(strategy).__name__
        replicas = getattr(strategy, "num_replicas_in_sync", None)
        if name in ("_DefaultDistributionStrategy", "DefaultDistributionStrategy"):
            name = "default"
        return name, int(replicas) if replicas is not None else 1
    try:
        import keras

        dist = keras.distribution.distribution()
    except Exception:
        dist = None
    if dist is not None:
        devices = getattr(getattr(dist, "device_mesh", None), "devices", None)
        count = int(getattr(devices, "size", 0) or 0) or None
        return type(dist).__name__, count
    return "default", 1


def _layers(model: Any) -> list[Any]:
    try:
        return list(model._flatten_layers(include_self=False))
    except Exception:
        return list(getattr(model, "layers", []))


def _size(weight: Any) -> int:
    n = 1
    for d in weight.shape:
        n *= int(d)
    return n


def _tb_profiles(cb: Any) -> bool:
    batches = getattr(cb, "_profile_batch", None) or getattr(cb, "profile_batch", None)
    if isinstance(batches, (tuple, list)):
        return any(int(b) > 0 for b in batches)
    try:
        return int(batches or 0) > 0
    except (TypeError, ValueError):
        return True


def _retraces(model: Any) -> int | None:
    """Times the train step was traced again after its first trace.

    TensorFlow: the tracing count of the ``tf.function`` (Keras 3 keeps it inside the step
    function's closure). JAX: compiled entries in the cache of the ``jax.jit`` function Keras
    wraps the step in (each new input shape compiles again). torch without ``jit_compile`` has
    no graph to retrace: unknown. With several compiled functions, the largest count.
    """
    counts: list[int] = []
    for fn in _compiled_functions(getattr(model, "train_function", None)):
        try:
            if hasattr(fn, "experimental_get_tracing_count"):
                counts.append(int(fn.experimental_get_tracing_count()) - 1)
            else:
                counts.append(int(fn._cache_size()) - 1)
        except Exception:
            continue
    return max(0, max(counts)) if counts else None


def _compiled_functions(fn: Any, depth: int = 3) -> list[Any]:
    """``tf.function`` / ``jax.jit`` objects in a step function and its closure (a few levels)."""
    found, todo, seen = [], [(fn, 0)], set()
    while todo:
        obj, level = todo.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        if callable(getattr(obj, "experimental_get_tracing_count", None)) or callable(
            getattr(obj, "_cache_size", None)
        ):
            found.append(obj)
            continue
        if level >= depth:
            continue
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                todo.append((cell.cell_contents, level + 1))
            except ValueError:  # an empty cell
                continue
    return found
