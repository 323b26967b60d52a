"""Facts introspected at train begin: framework, strategy, batch, precision, compilation,
callbacks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact, written_values
from advisor.numbers import strategy_label

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("context.backend", "", "Keras backend: tensorflow, jax or torch", "context", "str"),
    Fact("context.legacy_keras", "", "training runs on tf_keras (Keras 2)", "context", "bool"),
    Fact(
        "context.strategy",
        "",
        "distribution strategy class (or Horovod, DataParallel)",
        "context",
        "str",
    ),
    Fact(
        "context.strategy_name",
        "",
        "the strategy as every view names it (multiworker, mirrored, jax, horovod, "
        "single; a sweep's own name)",
        "context",
        "str",
    ),
    Fact(
        "context.replicas",
        "",
        "replicas in sync (accelerators sharing one global batch)",
        "context",
    ),
    Fact("context.num_workers", "", "worker processes in the job", "context"),
    Fact(
        "context.global_batch_size",
        "samples",
        "samples per optimizer step, all replicas",
        "context",
    ),
    Fact("context.per_replica_batch_size", "samples", "samples per step on one replica", "context"),
    Fact("context.steps_per_execution", "", "training steps per host dispatch", "context"),
    Fact(
        "context.dtype_policy",
        "",
        "Keras dtype policy name, e.g. float32 or mixed_bfloat16",
        "context",
        "str",
    ),
    Fact("context.mixed_precision", "", "the dtype policy computes in 16 bits", "context", "bool"),
    Fact("context.jit_compile", "", "the train step is XLA-compiled", "context", "bool"),
    Fact("context.run_eagerly", "", "the train step runs eagerly (no graph)", "context", "bool"),
    Fact("context.callbacks", "", "class names of the callbacks passed to fit", "context", "list"),
    Fact("context.early_stopping", "", "an early-stopping callback is in use", "context", "bool"),
    Fact(
        "context.tracking",
        "",
        "an experiment-tracking callback is in use (TensorBoard, MLflow, W&B, CSVLogger)",
        "context",
        "bool",
    ),
    Fact(
        "context.tuner",
        "",
        "a hyper-parameter tuner (KerasTuner, Optuna, Ray Tune) is loaded",
        "context",
        "bool",
    ),
    Fact(
        "context.profiling_configured",
        "",
        "a profiler window is configured (advisor or TensorBoard profile_batch)",
        "context",
        "bool",
    ),
    Fact("context.conv_layers", "", "convolution layers in the model", "context"),
    Fact(
        "context.conv_channels_first",
        "",
        "some convolution layer uses channels_first",
        "context",
        "bool",
    ),
    Fact("context.params", "", "trainable parameters", "context"),
    Fact(
        "context.input_kind",
        "",
        "input type: tf.data, numpy, generator, pydataset, torch",
        "context",
        "str",
    ),
    Fact("context.host_cpu_count", "", "logical CPUs on the host", "context"),
    Fact(
        "context.graph_retraces",
        "",
        "times the train function was traced again after the first trace",
        "context",
    ),
    Fact(
        "context.horovod_compression",
        "",
        "Horovod gradient compression in use (none, fp16)",
        "context",
        "str",
    ),
    Fact("context.framework", "", "which Keras trains: keras3 or tf_keras", "context", "str"),
    Fact(
        "context.jit_compile_default",
        "",
        "what jit_compile is when left at its default for this backend, model and machine",
        "context",
        "bool",
    ),
    Fact(
        "context.device",
        "",
        "kind of device the backend trains on: gpu, tpu, cpu, mps",
        "context",
        "str",
    ),
    Fact("context.device_count", "", "devices of that kind this process sees", "context"),
    Fact(
        "model.preprocessing_layers",
        "",
        "Keras preprocessing layers inside the model (they run with the model, on its device)",
        "context",
        "list",
    ),
    Fact(
        "model.augmentation_layers",
        "",
        "random augmentation layers inside the model (RandomFlip, RandomRotation, MixUp…)",
        "context",
        "list",
    ),
    Fact(
        "model.custom_objects",
        "",
        "layers, losses, metrics and model classes defined outside Keras",
        "context",
        "list",
    ),
    Fact(
        "model.config_problems",
        "",
        "custom objects that cannot be rebuilt from their config (get_config missing, failing "
        "or leaving out __init__ arguments), each with what is missing",
        "context",
        "list",
    ),
    Fact(
        "model.jit_supported",
        "",
        "Keras's own verdict (model_supports_jit) on whether the model can be XLA-compiled",
        "context",
        "bool",
    ),
    Fact(
        "model.jit_unsupported_layers",
        "",
        "layers that refuse jit_compile (supports_jit is False): Keras compiles the model without",
        "context",
        "list",
    ),
    Fact(
        "model.config_problem_count",
        "",
        "custom objects that model.save, clone_model and a reload cannot rebuild",
        "context",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    """Context records hold ``context.*`` values directly; the last record of the chief wins."""
    from advisor.store.schema import ContextRecord

    # the last written wins, but a value of the wrong kind is kept to be said (registry)
    out = written_values(
        (r.values for r in run.chief_of_type(ContextRecord)), {f.name: f for f in FACTS}
    )
    m = run.manifest
    manifest_values = {
        "context.strategy": m.strategy,
        "context.replicas": m.replicas,
        "context.num_workers": m.num_workers,
        "context.global_batch_size": m.global_batch_size,
        "context.per_replica_batch_size": m.per_replica_batch_size,
        "context.steps_per_execution": m.steps_per_execution,
        "context.dtype_policy": m.dtype_policy,
        "context.jit_compile": m.jit_compile,
        "context.backend": m.framework.backend,
        "context.legacy_keras": m.framework.legacy_keras,
    }
    for key, value in manifest_values.items():
        if value is not None:
            out.setdefault(key, value)
    if isinstance(out.get("model.config_problems"), list):
        out["model.config_problem_count"] = len(out["model.config_problems"])
    if "context.strategy" in out:
        out["context.strategy_name"] = strategy_label(str(out["context.strategy"]), m.tags)
    return out
