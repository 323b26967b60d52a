"""The user's model at another Keras dtype policy: its config with every layer that computes in
the model's own policy moved to the new one (layers the user pinned to another policy, such as a
float32 output layer under a mixed policy, stay), rebuilt with the same weights."""

from __future__ import annotations

from typing import Any

POLICY_CLASSES = ("DTypePolicy", "FloatDTypePolicy")


def _rewrite(node: Any, own: str, target: str) -> int:
    """Replace policy ``own`` by ``target`` in a config, in place; how many were replaced."""
    count = 0
    if isinstance(node, dict):
        config = node.get("config")
        if node.get("class_name") in POLICY_CLASSES and isinstance(config, dict):
            if config.get("name") == own:
                config["name"] = target
                return 1
            return 0
        for value in node.values():
            count += _rewrite(value, own, target)
    elif isinstance(node, list):
        for value in node:
            count += _rewrite(value, own, target)
    return count


def layers_policy(model: Any) -> str:
    """The policy most of the model's weights compute in (a model loaded from a file takes the
    global policy for itself, its layers keep theirs; a float32 output layer is a few weights)."""
    weights: dict[str, int] = {}
    for layer in getattr(model, "layers", []):
        name = getattr(getattr(layer, "dtype_policy", None), "name", None)
        try:
            count = int(layer.count_params())
        except Exception:  # noqa: BLE001 — a layer not built has no weights to count
            count = 0
        if name and count:
            weights[name] = weights.get(name, 0) + count
    if not weights:
        return getattr(getattr(model, "dtype_policy", None), "name", None) or "float32"
    return max(weights, key=lambda n: weights[n])


def with_policy(model: Any, target: str, keras: Any) -> Any:
    """``model`` rebuilt at the dtype policy ``target`` and compiled under it (so that
    ``mixed_float16`` gets Keras's loss scaling as in a fit), with the same weights; rebuilt
    also when it already computes in ``target``, for the same reason."""
    own = layers_policy(model)
    config = model.get_config()
    _rewrite(config, own, target)
    keras.mixed_precision.set_global_policy(target)  # what the config leaves to the global one
    rebuilt = type(model).from_config(config)
    rebuilt.set_weights(model.get_weights())
    compile_config = model.get_compile_config() if hasattr(model, "get_compile_config") else None
    if compile_config:
        rebuilt.compile_from_config(compile_config)
    return rebuilt
