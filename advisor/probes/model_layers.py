"""What the model holds: preprocessing and augmentation layers, and custom objects that cannot be
rebuilt from their config.

``read_model(model)`` walks the model's layers (nested models too) and its compiled loss and
metrics once, at train begin, and returns plain values for the run's context record:

- ``model.preprocessing_layers`` / ``model.augmentation_layers``: class names of the Keras
  preprocessing layers inside the model, and of those that draw random numbers (``RandomFlip``,
  ``RandomRotation``, ``MixUp`` …), which run on the accelerator with the model;
- ``model.custom_objects``: classes defined outside Keras (layers, losses, metrics, the model);
- ``model.config_problems``: those of them that ``model.save``, ``keras.models.clone_model`` and
  a reload in another process cannot rebuild, each as one line naming the class and what is
  missing: ``get_config()`` raises (Keras 3 writes it only when every ``__init__`` argument is a
  plain value), or the config it returns leaves out arguments of ``__init__`` (a required one
  fails ``from_config``; an optional one comes back at its default).

- ``model.jit_supported``: Keras's own verdict on whether this model can be XLA-compiled
  (``keras.src.trainers.trainer.model_supports_jit``: every layer's ``supports_jit``, and no TF
  op determinism or Apple GPU), with ``model.jit_unsupported_layers`` the layers that refuse it
  (lookups, hashing, several random augmentation layers, cuDNN LSTM/GRU): Keras turns
  ``jit_compile=True`` off for such a model, so "try XLA" does not apply to it.

Only ``get_config()`` and ``supports_jit`` are read — no object is rebuilt, nothing is traced.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

_LIBRARY_MODULES = ("keras", "tf_keras", "tensorflow", "keras_hub", "keras_nlp", "keras_cv")
# random augmentation layers whose names do not start with "Random"
_AUGMENTATION = frozenset(
    {"RandAugment", "AugMix", "MixUp", "CutMix", "Solarization", "AutoContrast", "Equalization"}
)
_MAX_LISTED = 20


def read_model(model: Any) -> dict[str, Any]:
    """The ``model.*`` values of the context record (empty lists left out)."""
    preprocessing: list[str] = []
    augmentation: list[str] = []
    no_jit: list[str] = []
    custom: dict[type, tuple[str, Any]] = {}
    for layer in _layers(model):
        cls = type(layer)
        if getattr(layer, "supports_jit", True) is False and cls.__name__ not in no_jit:
            no_jit.append(cls.__name__)
        if _is_preprocessing(cls):
            preprocessing.append(cls.__name__)
            if _is_augmentation(cls):
                augmentation.append(cls.__name__)
        elif is_custom(cls):
            custom.setdefault(cls, ("layer", layer))
    if is_custom(type(model)):
        custom.setdefault(type(model), ("model", model))
    for role, obj in _compiled_objects(model):
        if is_custom(type(obj)) and not inspect.isfunction(obj):
            custom.setdefault(type(obj), (role, obj))
    problems = [
        f"{cls.__name__} ({role}): {problem}"
        for cls, (role, obj) in custom.items()
        if (problem := config_problem(obj)) is not None
    ]
    values: dict[str, Any] = {
        "model.preprocessing_layers": preprocessing[:_MAX_LISTED],
        "model.augmentation_layers": augmentation[:_MAX_LISTED],
        "model.custom_objects": [f"{c.__name__} ({r})" for c, (r, _) in custom.items()][
            :_MAX_LISTED
        ],
        "model.config_problems": problems[:_MAX_LISTED],
        "model.jit_unsupported_layers": no_jit[:_MAX_LISTED],
    }
    supported = jit_supported(model)
    if supported is not None:
        values["model.jit_supported"] = supported
    return values


def jit_supported(model: Any) -> bool | None:
    """Keras 3's own ``model_supports_jit(model)``; None where it is not there (tf_keras, another
    Keras version) or fails."""
    if not any(c.__module__.startswith("keras.src") for c in type(model).__mro__):
        return None
    try:
        from keras.src.trainers.trainer import model_supports_jit

        return bool(model_supports_jit(model))
    except Exception:  # noqa: BLE001 — an unknown verdict, not an error
        return None


def config_problem(obj: Any) -> str | None:
    """Why ``obj`` cannot be rebuilt from its config, in words; None when it can."""
    try:
        config = obj.get_config()
    except NotImplementedError:
        return "no get_config(), and its __init__ takes values Keras cannot write" + _args_text(obj)
    except Exception as exc:  # noqa: BLE001 — a get_config that fails is the finding
        return f"get_config() raises {type(exc).__name__}" + _args_text(obj)
    if not isinstance(config, dict):
        return f"get_config() returns a {type(config).__name__}, not a dict"
    required, optional = init_arguments(type(obj))
    missing_required = [a for a in required if a not in config]
    missing_optional = [a for a in optional if a not in config]
    if missing_required:
        return (
            "get_config() leaves out the required argument"
            f"{'s' if len(missing_required) > 1 else ''} {', '.join(missing_required)}: "
            "from_config() fails"
        )
    if missing_optional:
        return (
            f"get_config() leaves out {', '.join(missing_optional)}: a copy gets "
            f"{'their defaults' if len(missing_optional) > 1 else 'its default'}"
        )
    return None


def init_arguments(cls: type) -> tuple[list[str], list[str]]:
    """(required, optional) named arguments of ``cls.__init__``, without ``self``, ``*args`` and
    ``**kwargs`` (which Keras fills from the base config: name, dtype, trainable…)."""
    try:
        params = list(inspect.signature(_constructor(cls)).parameters.values())[1:]
    except (TypeError, ValueError):
        return [], []
    named = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
    ]
    required = [p.name for p in named if p.default is p.empty]
    optional = [p.name for p in named if p.default is not p.empty]
    return required, optional


def _constructor(cls: type) -> Any:
    """The ``__init__`` that builds ``cls`` (its own or inherited)."""
    return getattr(cls, "__init__")  # noqa: B009 — mypy refuses ``cls.__init__`` on a type


def is_custom(cls: type) -> bool:
    """Defined outside Keras, TensorFlow and the Keras libraries."""
    root = (cls.__module__ or "").split(".")[0]
    return root not in _LIBRARY_MODULES and root != "builtins"


def _args_text(obj: Any) -> str:
    required, optional = init_arguments(type(obj))
    names = required + optional
    return f" ({', '.join(names)})" if names else ""


def _is_preprocessing(cls: type) -> bool:
    return not is_custom(cls) and ".preprocessing" in cls.__module__


def _is_augmentation(cls: type) -> bool:
    return cls.__name__.startswith("Random") or cls.__name__ in _AUGMENTATION


def _layers(model: Any) -> Iterator[Any]:
    """Every layer inside ``model``, depth first in the model's order (nested models too)."""
    seen: set[int] = {id(model)}
    stack = [model]
    while stack:
        layer = stack.pop()
        children = [c for c in _children(layer) if id(c) not in seen]
        seen.update(id(c) for c in children)
        if layer is not model:
            yield layer
        stack.extend(reversed(children))


def _children(layer: Any) -> list[Any]:
    try:
        return list(layer._flatten_layers(include_self=False, recursive=False))
    except Exception:  # noqa: BLE001 — an unusual layer: its public list
        return list(getattr(layer, "layers", None) or [])


def _compiled_objects(model: Any) -> Iterator[tuple[str, Any]]:
    """The loss and metric objects given to ``compile`` (functions are saved by name)."""
    loss = getattr(model, "loss", None)
    for item in _flatten(loss):
        yield "loss", item
    try:
        compiled = model._compile_metrics  # Keras 3
    except AttributeError:
        compiled = getattr(model, "compiled_metrics", None)  # tf_keras
    for attr in ("_user_metrics", "_user_weighted_metrics"):
        for item in _flatten(getattr(compiled, attr, None)):
            if not isinstance(item, str):
                yield "metric", item


def _flatten(value: Any) -> Iterator[Any]:
    if value is None or isinstance(value, str):
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    else:
        yield value
