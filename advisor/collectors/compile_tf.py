"""TensorFlow's compile events: every trace of a ``tf.function`` in the process, timed, with the
function's name and why it was traced again.

TensorFlow builds a graph for a ``tf.function`` in ``tracing_compilation._create_concrete_function``
(the work its own counter ``/tensorflow/core/tf_function/graph_building_time_usecs`` times). The
listener wraps that module function once per process: the wrapper reads the clock around the
original and compares the new input signature with the function's previous one, so each event says
what changed (a tensor's shape or dtype, a Python value, the partial last batch). Traces nested in
another trace (a ``tf.function`` called inside one) are part of the outer trace's time and are not
counted twice. Nothing else changes: the original runs with the same arguments and its result or
exception is passed on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from advisor.collectors.compile_causes import Leaf, PartialBatches, cause_of

Emit = Callable[[dict[str, Any]], None]
MAX_FUNCTIONS = 1000  # signatures kept for this many functions (a process tracing more forgets)


class TracingListener:
    """The wrapper around TensorFlow's tracing; ``emit`` receives one dict per outermost trace."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._local = threading.local()
        self._last: dict[tuple[str, str], tuple[int, list[Leaf], int]] = {}
        self._partial = PartialBatches()
        self._module: Any = None
        self._original: Any = None

    def install(self) -> bool:
        from tensorflow.python.eager.polymorphic_function import tracing_compilation

        original = tracing_compilation._create_concrete_function
        if getattr(original, "_advisor_listener", None) is not None:
            return False  # another listener is in place: one wrapper per process
        self._module, self._original = tracing_compilation, original
        wrapper = self._wrapper(original)
        wrapper._advisor_listener = self  # type: ignore[attr-defined]
        tracing_compilation._create_concrete_function = wrapper
        return True

    def uninstall(self) -> None:
        module = self._module
        if module is not None and getattr(
            module._create_concrete_function, "_advisor_listener", None
        ):
            module._create_concrete_function = self._original
        self._module = None

    def _wrapper(self, original: Any) -> Any:
        local = self._local

        def create_concrete_function(
            function_type: Any, type_context: Any, func_graph: Any, tracing_options: Any
        ) -> Any:
            depth = getattr(local, "depth", 0)
            local.depth = depth + 1
            t0 = time.perf_counter()
            try:
                return original(function_type, type_context, func_graph, tracing_options)
            finally:
                local.depth = depth
                if depth == 0:
                    self._traced(function_type, tracing_options, time.perf_counter() - t0)

        return create_concrete_function

    def _traced(self, function_type: Any, options: Any, seconds: float) -> None:
        try:
            python_function = options.python_function
            name = str(getattr(options, "name", "") or "function")
            qualname = str(getattr(python_function, "__qualname__", name))
            leaves = signature_leaves(function_type)
            key = (name, qualname)
            before = self._last.get(key)
            if before is None:
                cause, detail = "first", ""
            elif before[0] != id(python_function):
                cause, detail = "new_function", "the tf.function was created again"
            else:
                cause, detail = cause_of(before[1], leaves, before[2])
            batch = max((leaf.batch for leaf in leaves), default=0)
            cause = self._partial.refine(qualname, cause, batch)
            largest = max(batch, before[2]) if before else batch
            if len(self._last) < MAX_FUNCTIONS or key in self._last:
                self._last[key] = (id(python_function), leaves, largest)
            self.emit(
                {
                    "t": time.time(),
                    "seconds": seconds,
                    "function": name if qualname.endswith(name) else f"{name} ({qualname})",
                    "cause": cause,
                    "detail": detail,
                    "kind": "trace",
                }
            )
        except Exception:  # an unknown signature: the event without its cause
            self.emit(
                {
                    "t": time.time(),
                    "seconds": seconds,
                    "function": "function",
                    "cause": "unknown",
                    "kind": "trace",
                }
            )


def signature_leaves(function_type: Any) -> list[Leaf]:
    """The traced signature as leaves: tensors (shape, dtype) and Python values, by path."""
    out: list[Leaf] = []
    for parameter in function_type.parameters.values():
        _flatten(parameter.type_constraint, str(parameter.name), out)
    return out


def _flatten(spec: Any, path: str, out: list[Leaf], depth: int = 0) -> None:
    if depth > 8 or len(out) > 200:
        return
    shape, dtype = getattr(spec, "shape", None), getattr(spec, "dtype", None)
    if shape is not None and dtype is not None:
        try:
            dims = tuple(shape.as_list()) if shape.rank is not None else None
        except Exception:
            dims = None
        out.append(Leaf(path, "tensor", dims, str(getattr(dtype, "name", dtype))))
        return
    element = getattr(spec, "element_spec", None)  # an iterator or a dataset
    if element is not None:
        _flatten_nested(element, path, out, depth)
        return
    components = getattr(spec, "components", None)
    if isinstance(components, (list, tuple)):
        for i, part in enumerate(components):
            _flatten(part, f"{path}[{i}]", out, depth + 1)
        return
    mapping = getattr(spec, "mapping", None)
    if isinstance(mapping, dict):
        for k, part in mapping.items():
            _flatten(part, f"{path}[{k!r}]", out, depth + 1)
        return
    if hasattr(spec, "value"):
        out.append(Leaf(path, "value", None, repr(spec.value)[:60]))
        return
    out.append(Leaf(path, "other", None, repr(spec)[:80]))


def _flatten_nested(element: Any, path: str, out: list[Leaf], depth: int) -> None:
    if isinstance(element, (list, tuple)):
        for i, part in enumerate(element):
            _flatten_nested(part, f"{path}[{i}]", out, depth + 1)
    elif isinstance(element, dict):
        for k, part in element.items():
            _flatten_nested(part, f"{path}[{k!r}]", out, depth + 1)
    else:
        _flatten(element, path, out, depth + 1)


def framework_seconds() -> float | None:
    """TensorFlow's own total of graph-building time so far (its monitoring counter), seconds."""
    try:
        from tensorflow.python.eager.polymorphic_function import tracing_compilation

        cell = tracing_compilation._graph_building_time_counter.get_cell()
        return float(cell.value()) / 1e6
    except Exception:
        return None
