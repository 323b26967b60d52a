"""torch.compile's compile events: each Dynamo compilation, timed, with the frame's function and the
guard that failed (why it recompiled), and the graph breaks with their reasons.

Dynamo calls the start and end callbacks of ``torch._dynamo.callback.callback_handler`` around every
compilation it runs; the listener times that span. Why it recompiled is the newest entry of
``torch._dynamo.utils.guard_failures`` (the failed guard, as ``TORCH_LOGS=recompiles`` prints it:
a tensor's size, a Python value, a dtype). Graph breaks are Dynamo's own counter
(``counters["graph_break"]``, reason → count), read as a difference since install.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from advisor.collectors.compile_causes import PartialBatches

Emit = Callable[[dict[str, Any]], None]
SIZE = re.compile(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)")


def cause_from_guard(reason: str) -> tuple[str, str]:
    """(cause, detail) from a failed guard's text."""
    text = reason.split("\n", 1)[0]
    text = text.split(": ", 1)[1] if re.match(r"^\d+/\d+: ", text) else text
    text = text.split("#", 1)[0].strip()
    size = SIZE.search(text)
    if size:
        index, expected, actual = (int(g) for g in size.groups())
        if index == 0 and actual < expected:
            return "partial_batch", text
        return "shape", text
    if "dtype" in text:
        return "dtype", text
    if "==" in text or "id(" in text:
        return "python_value", text
    return "other", text


class DynamoCompiles:
    """The Dynamo callbacks; ``emit`` receives one dict per compilation."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._start: float | None = None
        self._failures_seen: dict[str, int] = {}
        self._breaks: dict[str, int] = {}
        self._installed = False
        self._partial = PartialBatches()
        self._last: tuple[str, str, str] = ("frame", "first", "")
        self._frame: str | None = None

    def install(self) -> bool:
        from torch._dynamo.callback import callback_handler

        callback_handler.register_start_callback(self._started)
        callback_handler.register_end_callback(self._ended)
        self._failures_seen = _failure_lengths()
        self._breaks = graph_breaks()
        self._installed = True
        return True

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        try:
            from torch._dynamo.callback import callback_handler

            callback_handler.remove_start_callback(self._started)
            callback_handler.remove_end_callback(self._ended)
        except Exception:
            pass

    def new_graph_breaks(self) -> dict[str, int]:
        """Graph breaks since install (or the last call), reason → count."""
        now = graph_breaks()
        out = {k: v - self._breaks.get(k, 0) for k, v in now.items() if v > self._breaks.get(k, 0)}
        self._breaks = now
        return out

    def _started(self, *args: Any) -> None:
        self._start = time.perf_counter()
        self._frame = _compiling_code_name()

    def _ended(self, *args: Any) -> None:
        if self._start is None:
            return
        seconds, self._start = time.perf_counter() - self._start, None
        trigger = str(getattr(args[0], "callback_trigger", "")) if args else ""
        kind = "compile"
        if "BACKWARD" in trigger.upper():
            # the backward graph of the forward compiled last: the same function and cause
            function, cause, detail = self._last
            kind = "backward"
        else:
            function, cause, detail = self._frame or "frame", "first", ""
            latest = _latest_failure(self._failures_seen)
            self._failures_seen = _failure_lengths()
            if latest is not None:
                function, reason = latest
                cause, detail = cause_from_guard(reason)
                size = SIZE.search(detail)
                cause = self._partial.refine(function, cause, int(size.group(3)) if size else None)
            self._last = (function, cause, detail)
        self.emit(
            {
                "t": time.time(),
                "seconds": seconds,
                "function": function,
                "cause": cause,
                "detail": detail,
                "kind": kind,
            }
        )


def _compiling_code_name(depth: int = 40) -> str | None:
    """The name of the code Dynamo is compiling: a ``code`` local of a frame up the stack."""
    import sys
    import types

    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        code = frame.f_locals.get("code") if "compile" in frame.f_code.co_name else None
        if isinstance(code, types.CodeType):
            return code.co_name
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _failure_lengths() -> dict[str, int]:
    from torch._dynamo.utils import guard_failures

    return {_code_key(code): len(reasons) for code, reasons in guard_failures.items()}


def _code_key(code: Any) -> str:
    return f"{getattr(code, 'co_name', code)}@{id(code)}"


def _latest_failure(seen: dict[str, int]) -> tuple[str, str] | None:
    """(the function, its newest failed guard) of a code whose failures grew since ``seen``."""
    from torch._dynamo.utils import guard_failures

    for code, reasons in guard_failures.items():
        if reasons and len(reasons) > seen.get(_code_key(code), 0):
            return str(getattr(code, "co_name", code)), str(reasons[-1])
    return None


def graph_breaks() -> dict[str, int]:
    try:
        from torch._dynamo.utils import counters

        return {str(k)[:200]: int(v) for k, v in counters["graph_break"].items()}
    except Exception:
        return {}
