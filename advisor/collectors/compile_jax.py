"""JAX's compile events, from ``jax.monitoring``: each compilation of a jitted function, timed, with
the function's name and, once it compiles again, why.

JAX reports the three stages of a compilation as timed events with the function's name: tracing to
a jaxpr (``/jax/core/compile/jaxpr_trace_duration``), lowering (``…/jaxpr_to_mlir_module_duration``)
and the backend's compile (``…/backend_compile_duration``). The listener joins the spans that end
at a backend compile into one event (their union: a function traced inside another is not counted
twice). For the cause, the listener switches on JAX's own explanation of cache misses
(``jax_explain_cache_misses``, jax-ml/jax#4274; computed on a cache miss only) and reads it,
keeping those warnings out of the user's log unless the user had switched them on; at uninstall
the setting goes back.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from advisor.collectors.compile_causes import Leaf, cause_of

Emit = Callable[[dict[str, Any]], None]
STAGES = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
BACKEND_COMPILE = STAGES[2]
EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
# Logs "Compiling <module> with global shapes and types [...]" (at DEBUG unless jax_log_compiles).
COMPILE_LOGGER = "jax._src.interpreters.pxla"
AVAL = re.compile(r"([a-z]+[0-9]*)\[([0-9,]*)\]")


def cause_from_explanation(text: str) -> tuple[str, str]:
    """(cause, detail) from JAX's "TRACING CACHE MISS" explanation."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    starred = [line.lstrip("* ") for line in lines if line.startswith("*")]
    detail = (starred[0] if starred else " ".join(lines[1:3]))[:200]
    lowered = text.lower()
    if "never seen function" in lowered:
        return "new_function", detail
    if "static(" in lowered or "static argument" in lowered:
        return "static_argument", detail
    if "different input pytree" in lowered:
        return "structure", detail
    if "different input types" in lowered or "types differ" in lowered:
        return "shape", detail
    return "other", detail


class _Capture(logging.Filter):
    """Reads JAX's cache-miss explanations and compile lines; drops what only the listener
    asked for (explanations the user did not switch on, records below the logger's old level)."""

    def __init__(self, listener: CompileSpans, swallow: bool, below: int) -> None:
        super().__init__()
        self.listener, self.swallow, self.below = listener, swallow, below

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "CACHE MISS" in message:
            self.listener.explained(message)
            return not self.swallow
        if message.startswith("Compiling ") and "global shapes and types" in message:
            self.listener.compiling(message)
        return record.levelno >= self.below


def avals_leaves(message: str) -> list[Leaf]:
    """The arguments of a "Compiling … with global shapes and types [...]" line as leaves."""
    text = message.split("global shapes and types", 1)[1].split("Argument mapping", 1)[0]
    return [
        Leaf(str(i), "tensor", tuple(int(d) for d in dims.split(",") if d), dtype)
        for i, (dtype, dims) in enumerate(AVAL.findall(text))
    ]


class CompileSpans:
    """The ``jax.monitoring`` listener; ``emit`` receives one dict per backend compile."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._lock = threading.Lock()
        self._spans: list[tuple[float, float]] = []
        self._compiles: dict[str, int] = {}
        self._explanation: str | None = None
        self._avals: list[Leaf] | None = None
        self._seen: dict[str, tuple[list[Leaf], int]] = {}  # function → last avals, largest batch
        self._filters: list[tuple[logging.Logger, _Capture, int]] = []
        self._turned_on = False
        self._installed = False

    def install(self) -> bool:
        from jax import monitoring

        monitoring.register_event_time_span_listener(self._span)
        self._installed = True
        self._explain(True)
        return True

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        try:
            from jax import monitoring

            monitoring.unregister_event_time_span_listener(self._span)
        except Exception:
            pass
        self._explain(False)

    def explained(self, message: str) -> None:
        with self._lock:
            self._explanation = message

    def compiling(self, message: str) -> None:
        try:
            leaves = avals_leaves(message)
        except Exception:
            return
        with self._lock:
            self._avals = leaves

    def _span(self, event: str, start: float, end: float, **kwargs: Any) -> None:
        if event not in STAGES:
            return
        with self._lock:
            self._spans.append((start, end))
            if event != BACKEND_COMPILE:
                return
            spans, self._spans = self._spans, []
            explanation, self._explanation = self._explanation, None
            avals, self._avals = self._avals, None
        name = str(kwargs.get("fun_name", "function"))
        count = self._compiles.get(name, 0) + 1
        self._compiles[name] = count
        cause, detail = self._cause(name, count, explanation, avals)
        self.emit(
            {
                "t": time.time(),
                "seconds": union_seconds(spans),
                "function": name,
                "cause": cause,
                "detail": detail,
                "kind": "compile",
            }
        )

    def _cause(
        self, name: str, count: int, explanation: str | None, avals: list[Leaf] | None
    ) -> tuple[str, str]:
        """JAX's explanation when it gave one (user functions), else the argument types compared
        with the function's previous compile; the same types mean a static argument changed."""
        before = self._seen.get(name)
        if avals is not None:
            batch = max((leaf.batch for leaf in avals), default=0)
            self._seen[name] = (avals, max(batch, before[1] if before else 0))
        if count == 1:
            return "first", ""
        if explanation:
            return cause_from_explanation(explanation)
        if avals is None or before is None:
            return "unknown", ""
        cause, detail = cause_of(before[0], avals, before[1])
        if cause == "other":
            return "static_argument", "same argument shapes and types: a static argument changed"
        return cause, detail

    def _explain(self, on: bool) -> None:
        """Switch JAX's cache-miss explanations and compile lines on (captured) or back."""
        try:
            import jax

            if on and not self._filters:
                already = bool(jax.config.jax_explain_cache_misses)
                for name in (EXPLAIN_LOGGER, COMPILE_LOGGER):
                    target = logging.getLogger(name)
                    old_level = target.level
                    below = target.getEffectiveLevel()
                    capture = _Capture(self, swallow=not already, below=below)
                    target.addFilter(capture)
                    if name == COMPILE_LOGGER and below > logging.DEBUG:
                        target.setLevel(logging.DEBUG)
                    self._filters.append((target, capture, old_level))
                if not already:
                    jax.config.update("jax_explain_cache_misses", True)
                    self._turned_on = True
            elif not on:
                for target, capture, old_level in self._filters:
                    target.removeFilter(capture)
                    target.setLevel(old_level)
                self._filters = []
                if self._turned_on:
                    jax.config.update("jax_explain_cache_misses", False)
                    self._turned_on = False
        except Exception:
            pass


def union_seconds(spans: list[tuple[float, float]]) -> float:
    """Length of the union of time spans (nested stages count once)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
