"""Which Keras trains a model, on which backend, with how many steps per execution.

Reads the model's class and the modules already imported; imports no Keras, TensorFlow, JAX or
torch itself, so it is safe under ``TF_USE_LEGACY_KERAS=1`` and on every backend.
"""

from __future__ import annotations

import sys
from typing import Any


def detect_framework(model: Any) -> tuple[str, str, dict[str, Any]]:
    """(flavor, backend, manifest framework info) of the Keras that owns ``model``.

    flavor is ``keras3`` or ``tf_keras`` (legacy Keras 2, always on TensorFlow).
    """
    module = type(model).__module__ or ""
    for cls in type(model).__mro__:
        if cls.__module__.startswith(("tf_keras", "keras.src", "tensorflow.python.keras")):
            module = cls.__module__
            break
    if module.startswith(("tf_keras", "tensorflow.python.keras")):
        flavor, backend = "tf_keras", "tensorflow"
        keras_module = sys.modules.get("tf_keras")
    else:
        flavor = "keras3"
        keras_module = sys.modules.get("keras")
        backend = keras_module.backend.backend() if keras_module is not None else "tensorflow"
    info: dict[str, Any] = {
        "keras_version": getattr(keras_module, "__version__", None),
        "backend": backend,
        "legacy_keras": flavor == "tf_keras",
    }
    backend_module = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend)
    if backend_module and backend_module in sys.modules:
        info["backend_version"] = getattr(sys.modules[backend_module], "__version__", None)
    if "tensorflow" in sys.modules:
        info["tensorflow_version"] = getattr(sys.modules["tensorflow"], "__version__", None)
    return flavor, backend, info


def backend_of(model: Any) -> str | None:
    """The backend of the Keras that owns ``model`` (tf_keras: tensorflow); None if unknown."""
    try:
        return detect_framework(model)[1]
    except Exception:
        return None


def is_tf_keras(model: Any) -> bool:
    return any(c.__module__.startswith("tf_keras") for c in type(model).__mro__)


def as_int(value: Any, default: int) -> int:
    """An int from a plain number or a (tf_keras, possibly distributed) variable; 0 → default."""
    for read in (lambda v: int(v), lambda v: int(v.numpy()), lambda v: int(v.read_value().numpy())):
        try:
            return read(value) or default
        except Exception:
            continue
    return default


def steps_per_execution(model: Any) -> int:
    """Train steps per host dispatch (Keras 3 attribute, or tf_keras's variable); at least 1."""
    value: Any = getattr(model, "steps_per_execution", None)
    if value is None:
        value = getattr(model, "_steps_per_execution", 1)
    return max(1, as_int(value, default=1))


def device_kind(backend: str | None) -> tuple[str | None, int | None]:
    """Kind of device the backend trains on (``gpu``, ``tpu``, ``cpu``…) and how many this process
    sees. Reads only frameworks that are already imported (the backend in use always is); on
    torch, Keras's own device choice when Keras's torch backend is loaded, else torch's CUDA."""
    try:
        if backend == "tensorflow" and "tensorflow" in sys.modules:
            tf = sys.modules["tensorflow"]
            for kind in ("TPU", "GPU"):
                found = tf.config.list_logical_devices(kind)
                if found:
                    return kind.lower(), len(found)
            return "cpu", len(tf.config.list_logical_devices("CPU")) or 1
        if backend == "jax" and "jax" in sys.modules:
            devices = sys.modules["jax"].local_devices()
            return (str(devices[0].platform).lower(), len(devices)) if devices else (None, None)
        if backend == "torch" and "torch" in sys.modules:
            torch = sys.modules["torch"]
            core = sys.modules.get("keras.src.backend.torch.core")
            if core is None:
                return (
                    ("gpu", int(torch.cuda.device_count()))
                    if torch.cuda.is_available()
                    else ("cpu", 1)
                )
            name = str(core.get_device()).split(":")[0]
            return ("gpu", int(torch.cuda.device_count())) if name == "cuda" else (name, 1)
    except Exception:
        return None, None
    return None, None


def dtype_policy_of(model: Any) -> str | None:
    """The model's dtype policy name (the global one when the model has none)."""
    policy = getattr(model, "dtype_policy", None)
    name = getattr(policy, "name", None)
    if name:
        return str(name)
    try:
        import keras

        return str(keras.config.dtype_policy().name)
    except Exception:
        return None
