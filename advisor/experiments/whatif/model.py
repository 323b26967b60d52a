"""Model candidates of the what-if: steps_per_execution, XLA, mixed precision, a larger batch.

Steps per execution and XLA change how Keras compiles the train step, not the model: the what-if
swaps a second compiled step into the user's own model for its segments and swaps the user's
back after each (``StepSwap``), so the user's step is never retraced or recompiled. Mixed
precision needs layers of another dtype policy: it trains a clone with the same weights. A larger
batch is per-sample throughput at ×2 or ×4 the batch, through its own compiled step; it changes
what training computes (the learning rate usually needs retuning), and its result says so.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import one_line
from advisor.experiments.whatif.trials import Candidate, NotApplicable, Situation, Trial

MAX_DISPATCH_STEP_S = 0.05  # above this a step's dispatch overhead (tens of µs) is far below 1 %
_MISSING = object()


# What a compiled train step depends on (Keras 3), and the step itself.
STEP_ATTRIBUTES = ("steps_per_execution", "_jit_compile", "train_function")


def step_settings(model: Any) -> dict[str, Any]:
    """The model's compiled-step settings and step, to put back with
    :func:`restore_step_settings`."""
    return {name: model.__dict__.get(name, _MISSING) for name in STEP_ATTRIBUTES}


def restore_step_settings(model: Any, saved: dict[str, Any]) -> None:
    for name, value in saved.items():
        if value is _MISSING:
            model.__dict__.pop(name, None)
        else:
            setattr(model, name, value)


class StepSwap:
    """Trains with other compile settings on the same model: ``enter`` sets them and this
    variant's compiled step; ``leave`` keeps that step for the next segment and puts the user's
    settings and step back exactly."""

    def __init__(self, model: Any, **changes: Any) -> None:
        self.model = model
        self.changes = changes
        self.variant_step: Any = None
        self.saved: dict[str, Any] = {}

    def enter(self) -> None:
        model = self.model
        self.saved = step_settings(model)
        for name, value in self.changes.items():
            setattr(model, name, value)
        model.train_function = self.variant_step

    def leave(self) -> None:
        self.variant_step = getattr(self.model, "train_function", None)
        restore_step_settings(self.model, self.saved)


def _keras3_only(s: Situation, what: str) -> None:
    if s.flavor != "keras3":
        raise NotApplicable(f"{what}: legacy tf_keras models are not reconfigured by the what-if")


def _swapped(
    s: Situation,
    name: str,
    label: str,
    *,
    spe: int | None = None,
    estimate: float = 1.0,
    **changes: Any,
) -> Trial:
    base = s.unchanged
    swap = StepSwap(s.model, **changes)
    return Trial(
        name,
        label,
        s.model,
        dict(base.kwargs),
        finite=base.finite,
        batch_size=base.batch_size,
        epoch_steps=base.epoch_steps,
        spe=spe or base.spe,
        epoch_length=base.epoch_length,
        enter=swap.enter,
        leave=swap.leave,
        setup_estimate=estimate * (s.compile_seconds or 1.0),
    )


def _model_reason(s: Situation) -> str | None:
    """Why a change to the step is left out of "auto" although it applies: the input dominates."""
    if s.input_bound and s.input_cost is not None:
        return (
            f"the input costs {s.input_cost:.0%} of step time: a faster step cannot show until "
            "the input is fixed (measure it again then)"
        )
    return None


# -- steps_per_execution ----------------------------------------------------------------------


def _spe_relevant(k: int) -> Any:
    def relevant(s: Situation) -> str | None:
        if s.flavor != "keras3" or s.backend == "torch" or s.run_eagerly:
            return "steps_per_execution > 1 needs Keras 3 on TensorFlow or JAX, not run eagerly"
        if s.steps_per_execution >= k:
            return f"steps_per_execution is already {s.steps_per_execution}"
        if (
            s.step_seconds is not None
            and s.step_seconds > MAX_DISPATCH_STEP_S * s.steps_per_execution
        ):
            return (
                f"a step takes {1000 * s.step_seconds:.0f} ms: the dispatch overhead "
                "steps_per_execution saves is far below 1% of it"
            )
        return _model_reason(s)

    return relevant


def _spe(k: int) -> Any:
    def build(s: Situation) -> Trial:
        _keras3_only(s, "steps_per_execution")
        if s.backend == "torch":
            raise NotApplicable(
                "Keras on torch runs one step per execution (steps_per_execution must be 1)"
            )
        if s.run_eagerly:
            raise NotApplicable(
                "the model runs eagerly (run_eagerly=True): nothing is compiled to run several "
                "steps"
            )
        return _swapped(
            s,
            f"steps_per_execution_{k}",
            f"model.compile(..., steps_per_execution={k})",
            spe=k,
            estimate=1.5,
            steps_per_execution=k,
        )

    return build


# -- XLA --------------------------------------------------------------------------------------


def _jit_relevant(s: Situation) -> str | None:
    if s.flavor != "keras3" or s.backend not in ("tensorflow", "jax"):
        return "XLA is tried on Keras 3 with TensorFlow or JAX"
    if s.jit_compile:
        return "the step is already compiled with XLA (jit_compile=True)"
    if s.run_eagerly:
        return "the model runs eagerly (run_eagerly=True)"
    return _model_reason(s)


def _jit(s: Situation) -> Trial:
    _keras3_only(s, "jit_compile")
    if s.backend == "torch":
        raise NotApplicable(
            "on torch jit_compile=True means torch.compile, whose first compilation alone "
            "outlasts a what-if window: try it in a full run"
        )
    if s.run_eagerly:
        raise NotApplicable("the model runs eagerly (run_eagerly=True)")
    model = s.model
    saved = model.__dict__.get("_jit_compile", _MISSING)
    try:
        model.jit_compile = True  # Keras checks that every layer supports XLA and warns if not
        supported = bool(model.jit_compile)
    except Exception as exc:  # noqa: BLE001 — a model that refuses it
        raise NotApplicable(
            f"the model refuses jit_compile=True: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        if saved is _MISSING:
            model.__dict__.pop("_jit_compile", None)
        else:
            model._jit_compile = saved
    if not supported:
        raise NotApplicable("Keras says a layer of this model does not support XLA")
    return _swapped(
        s, "jit_compile", "model.compile(..., jit_compile=True)", estimate=3.0, _jit_compile=True
    )


# -- mixed precision --------------------------------------------------------------------------


def _mixed_policy(s: Situation) -> str:
    if s.device == "gpu":
        return "mixed_bfloat16" if _gpu_capability() >= (8, 0) else "mixed_float16"
    return "mixed_bfloat16"


def _gpu_capability() -> tuple[int, int]:
    try:
        import tensorflow as tf

        details = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[0]
        )
        return tuple(details.get("compute_capability", (0, 0)))  # type: ignore[return-value]
    except Exception:  # noqa: BLE001 — unknown: assume a current GPU
        return (8, 0)


def _mixed_relevant(s: Situation) -> str | None:
    if s.dtype_policy and "16" in s.dtype_policy:
        return f"the model already trains in mixed precision ({s.dtype_policy})"
    if s.device != "gpu":
        return (
            f"no GPU ({s.device or 'unknown device'}): 16-bit compute is fast on accelerators "
            "(NVIDIA Volta or newer, TPU); ask for whatif=['mixed_precision'] to try bfloat16 on "
            "this CPU"
        )
    if _gpu_capability() < (7, 0):
        return "this GPU has no fast 16-bit units (compute capability below 7.0)"
    if s.flavor != "keras3":
        return "mixed precision is tried on Keras 3 models"
    return _model_reason(s)


def _mixed(s: Situation) -> Trial:
    _keras3_only(s, "mixed precision")
    import keras

    policy = _mixed_policy(s)

    def clone_layer(layer: Any) -> Any:
        config = layer.get_config()
        config["dtype"] = policy
        return layer.__class__.from_config(config)

    model = s.model
    try:
        clone = keras.models.clone_model(model, clone_function=clone_layer)
        clone.set_weights(model.get_weights())
        clone.compile_from_config(model.get_compile_config())
    except Exception as exc:  # noqa: BLE001 — subclassed models, custom layers without config
        raise NotApplicable(
            f"cannot rebuild the model under the {policy} policy: {one_line(exc, 160)}"
        ) from None
    base = s.unchanged
    trial = Trial(
        "mixed_precision",
        f"keras.mixed_precision.set_global_policy('{policy}') (a clone, same weights)",
        clone,
        dict(base.kwargs),
        finite=base.finite,
        batch_size=base.batch_size,
        epoch_steps=base.epoch_steps,
        spe=base.spe,
        epoch_length=base.epoch_length,
        setup_estimate=2.0 * (s.compile_seconds or 1.0) + 0.5,
    )
    trial.close = lambda: trial.__dict__.update(model=None)
    return trial


# -- a larger batch ---------------------------------------------------------------------------


def _batch_relevant(s: Situation) -> str | None:
    if s.kind not in ("tf.data", "numpy", "torch"):
        return f"the batch of a {s.kind} input is made inside it"
    if s.flavor != "keras3":
        return "a larger batch is tried on Keras 3 models"
    return _model_reason(s)


def _batch(k: int) -> Any:
    def build(s: Situation) -> Trial:
        _keras3_only(s, "a larger batch")
        base = s.unchanged
        size = base.batch_size * k
        kwargs = dict(base.kwargs)
        if s.kind == "tf.data":
            kwargs["x"] = s.dataset.rebatch(size, drop_remainder=True)
        elif s.kind == "numpy":
            kwargs["batch_size"] = size
        elif s.kind == "torch" and s.loader is not None and s.loader.batch_size is not None:
            from torch.utils.data import DataLoader

            loader = s.loader
            kwargs["x"] = DataLoader(
                loader.dataset,
                batch_size=size,
                sampler=loader.sampler,
                collate_fn=loader.collate_fn,
                drop_last=True,
                num_workers=loader.num_workers,
                pin_memory=loader.pin_memory,
                worker_init_fn=loader.worker_init_fn,
            )
        else:
            raise NotApplicable(f"the batch of a {s.kind} input is made inside it")
        trial = _swapped(
            s,
            f"batch_x{k}",
            f"batch size {size} (×{k}), per-sample throughput; it changes "
            "optimisation: retune the learning rate",
            estimate=1.0,
        )
        trial.kwargs, trial.batch_size, trial.changes_optimisation = kwargs, size, True
        # k batches make one (the last, short one dropped by the tf.data and torch rebatching)
        trial.epoch_length = (base.epoch_length // k or None) if base.epoch_length else None
        return trial

    return build


CANDIDATES = (
    Candidate("steps_per_execution_8", "model", _spe(8), _spe_relevant(8)),
    Candidate("steps_per_execution_32", "model", _spe(32), _spe_relevant(32)),
    Candidate("jit_compile", "model", _jit, _jit_relevant),
    Candidate("mixed_precision", "model", _mixed, _mixed_relevant),
    Candidate("batch_x2", "model", _batch(2), _batch_relevant),
    Candidate("batch_x4", "model", _batch(4), _batch_relevant),
)
