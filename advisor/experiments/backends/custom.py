"""The user's own classes and functions, carried to a backend candidate's process.

A fresh process finds a custom layer, model, loss, metric, initializer, regularizer or constraint
only if it can import it. Classes and functions defined in ``__main__`` (a script, a notebook) or
in a module the child cannot import travel **by value** — pickled with ``cloudpickle`` (it comes
with Ray, which ships functions the same way) — and those of importable modules by reference; the
child registers all of them as Keras custom objects under the names Keras's config uses. A class
whose ``__init__`` takes no ``**kwargs`` (so Keras's ``cls(**config)`` fails on ``trainable`` or
``dtype``) is rebuilt from the config keys its constructor accepts.

Parent side: ``collect`` and ``write``; child side: ``read``, ``lenient`` and ``load_modules``
(no ``advisor`` imports beyond the standard library and cloudpickle).
"""

from __future__ import annotations

import importlib.util
import inspect
import pickle
import sys
from pathlib import Path
from typing import Any

CUSTOM_FILE = "custom.pkl"
LIBRARIES = {"keras", "tensorflow", "tf_keras", "jax", "torch", "builtins", "keras_hub", "numpy"}
DEPTH = 3  # how deep into a layer's attributes custom objects are looked for


def _custom(obj: Any) -> Any:
    """The class or function of ``obj`` that is the user's own, or None."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        target = obj
    elif isinstance(obj, (str, bytes, int, float, bool, type(None))) or inspect.ismodule(obj):
        return None
    else:
        target = type(obj)
    module = (getattr(target, "__module__", None) or "").split(".")[0]
    qualname = getattr(target, "__qualname__", "")
    if module in LIBRARIES or module in sys.stdlib_module_names:
        return None
    parts = qualname.split(".")
    # a method travels with its class; a function or class defined inside a function (a loss
    # made by a factory, a layer class built in a helper) travels by value as it is
    if inspect.isfunction(target) and len(parts) > 1 and parts[-2] != "<locals>":
        return None
    return target


def _walk(obj: Any, found: dict[int, Any], seen: set[int], depth: int) -> None:
    if id(obj) in seen or depth < 0:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        for value in list(obj.values()):
            _walk(value, found, seen, depth)
        return
    if isinstance(obj, (list, tuple, set)):
        for value in list(obj):
            _walk(value, found, seen, depth)
        return
    target = _custom(obj)
    if target is not None:
        found.setdefault(id(target), target)
    if inspect.isclass(obj) or inspect.isfunction(obj) or not hasattr(obj, "__dict__"):
        return
    if type(obj).__module__.split(".")[0] in {"numpy", "tensorflow", "jax", "torch"}:
        return
    for value in list(vars(obj).values()):
        _walk(value, found, seen, depth - 1)


def collect(model: Any) -> list[Any]:
    """The user's own classes and functions the model, its layers, its compile arguments (loss,
    metrics, optimizer) and their attributes (initializers, regularizers, constraints) use."""
    objects: list[Any] = [model]
    objects += list(
        getattr(model, "_flatten_layers", lambda **_: [])(include_self=False, recursive=True)
    )
    compiled = getattr(model, "_compile_config", None)
    objects.append(getattr(compiled, "config", None))
    objects += [getattr(model, name, None) for name in ("loss", "optimizer", "_compile_metrics")]
    found: dict[int, Any] = {}
    seen: set[int] = set()
    for obj in objects:
        _walk(obj, found, seen, DEPTH)
    return sorted(found.values(), key=lambda t: (t.__module__, t.__qualname__))


def names(target: Any) -> list[str]:
    """The names Keras's config may give ``target``: its registered name and its own."""
    found = [target.__name__]
    try:
        from keras.saving import get_registered_name

        found.insert(0, get_registered_name(target))
    except Exception:  # noqa: BLE001, S110 — an unregistered object keeps its own name
        pass
    return list(dict.fromkeys(found))


def by_value(target: Any) -> bool:
    """Whether ``target`` must travel by value: a fresh process cannot import it by its name."""
    return not importable(target.__module__) or "<locals>" in target.__qualname__


def importable(module: str) -> bool:
    if module == "__main__":
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def write(
    targets: list[Any], directory: Path, swap: dict[int, Any] | None = None
) -> tuple[Path | None, str | None]:
    """``{name: class or function}`` into ``custom.pkl`` (by value where the child cannot import
    it); returns its path, or None with why the objects cannot travel. ``swap`` (``id`` of a
    target → its portable variant, ``portable.port_live``) sends the variant under the target's
    names."""
    if not targets:
        return None, None
    try:
        import cloudpickle
    except ImportError:
        shipped = [f"{t.__module__}.{t.__qualname__}" for t in targets if by_value(t)]
        return None, (
            f"custom objects defined in the script ({', '.join(shipped)}) need cloudpickle to "
            "travel to a fresh process: pip install cloudpickle, or move them to a module"
            if shipped
            else None
        )
    swap = swap or {}
    registry = {name: swap.get(id(t), t) for t in targets for name in names(t)}
    modules = {t.__module__ for t in targets if t.__module__ != "__main__"}
    registered = [sys.modules[m] for m in modules if m in sys.modules and not importable(m)]
    for module in registered:
        cloudpickle.register_pickle_by_value(module)
    try:
        data = cloudpickle.dumps(registry, protocol=pickle.DEFAULT_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 — the candidates then say what could not travel
        listed = ", ".join(sorted({t.__qualname__ for t in targets}))
        return None, f"the custom objects ({listed}) cannot be pickled: {type(exc).__name__}: {exc}"
    finally:
        for module in registered:
            cloudpickle.unregister_pickle_by_value(module)
    path = directory / CUSTOM_FILE
    path.write_bytes(data)
    return path, None


# -- child side ---------------------------------------------------------------------------------


def read(path: Path) -> dict[str, Any]:
    """The custom objects ``write`` pickled, each class made ``lenient``."""
    registry = pickle.loads(path.read_bytes())  # noqa: S301 — written by this run's own parent
    for target in registry.values():
        if inspect.isclass(target):
            lenient(target)
    return registry


def lenient(cls: Any) -> None:
    """A Keras class whose ``__init__`` takes no ``**kwargs`` and that keeps the base
    ``from_config`` is rebuilt from the config keys its constructor accepts (the rest —
    ``trainable``, ``dtype``, ``name`` — are set after)."""
    from_config = getattr(cls, "from_config", None)
    if from_config is None or "from_config" in vars(cls) or not hasattr(cls, "get_config"):
        return
    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = set(parameters) - {"self"}

    def rebuild(klass: Any, config: dict[str, Any]) -> Any:
        obj = klass(**{k: v for k, v in config.items() if k in accepted})
        if "trainable" in config and "trainable" not in accepted and hasattr(obj, "trainable"):
            obj.trainable = config["trainable"]
        return obj

    cls.from_config = classmethod(rebuild)


def load_module(spec: str) -> Any:
    """Import ``spec``: a module name, or ``NAME=FILE`` — the file executed as module ``NAME``
    (the portable variant ``portable.py`` wrote), so that what imports ``NAME`` later, Keras's
    deserialisation included, finds the rewrite."""
    name, _, file = spec.partition("=")
    if not file:
        return importlib.import_module(name)
    found = importlib.util.spec_from_file_location(name, file)
    if found is None or found.loader is None:
        raise ImportError(f"cannot load {file} as {name}")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    found.loader.exec_module(module)
    return module


def load_modules(specs: list[str]) -> tuple[str, Exception] | None:
    """``load_module`` each of ``specs`` in turn; the first that fails and its error, if any."""
    for spec in specs:
        try:
            load_module(spec)
        except Exception as exc:  # noqa: BLE001 — the candidate's reason: its module cannot load
            return spec, exc
    return None
