"""The runtime of rule conditions: limits, three-valued arithmetic and the few functions.

Every operation here is bounded (see :mod:`advisor.diagnosis.expr`): numbers stay within
``MAX_MAGNITUDE``, exponents within ``MAX_EXPONENT``, ``round`` digits within ``MAX_ROUND_DIGITS``;
``None`` (a fact that was not measured) propagates like SQL's NULL.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

MAX_SOURCE_CHARS = 2000
MAX_NODES = 500
MAX_DEPTH = 40
MAX_EXPONENT = 100
MAX_ROUND_DIGITS = 15
MAX_MAGNITUDE = 1e300

Env = tuple[Mapping[str, Any], Mapping[str, Any]]  # (facts, params)
Node = Callable[[Env], Any]


class ExprError(ValueError):
    """An expression that cannot be accepted (raised at load time) or evaluated."""


# -- runtime helpers (three-valued logic) ---------------------------------------------------


def as_number(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        if math.isnan(value) or abs(value) > MAX_MAGNITUDE:
            raise ExprError(f"number out of range: {value!r}")
        return value
    if isinstance(value, int):
        if abs(value) > MAX_MAGNITUDE:  # an int this large has ~1000 bits: still cheap
            raise ExprError(f"number out of range: an integer of {len(str(abs(value)))} digits")
        return value
    raise ExprError(f"arithmetic on a {type(value).__name__} value ({_short(value)})")


def finite_number(value: float) -> bool:
    """A number the language accepts as a value or threshold: finite, within MAX_MAGNITUDE."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return abs(value) <= MAX_MAGNITUDE


def number_text(value: Any) -> str:
    """A number for an error message, short even when it has thousands of digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"a number of {len(text)} digits"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _pow(a: Any, b: Any) -> Any:
    if abs(b) > MAX_EXPONENT:
        raise ExprError(f"exponent {b!r} too large (at most {MAX_EXPONENT})")
    if abs(a) > 1e6 and abs(b) > 2:
        raise ExprError(f"power {a!r} ** {b!r} too large")
    try:
        return a**b
    except ZeroDivisionError:
        return None  # 0 ** -1, like x / 0: undefined, not an error


def _div(a: Any, b: Any) -> Any:
    return None if b == 0 else a / b


def _floordiv(a: Any, b: Any) -> Any:
    return None if b == 0 else a // b


def _mod(a: Any, b: Any) -> Any:
    return None if b == 0 else a % b


BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _div,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}

COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _fn_coalesce(*values: Any) -> Any:
    for value in values:
        if value is not None:
            return value
    return None


def _fn_minmax(pick: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*values: Any) -> Any:
        known = [as_number(v) for v in values if v is not None]
        return pick(known) if known else None

    return fn


def _fn_abs(value: Any) -> Any:
    return None if value is None else abs(as_number(value))


def _fn_round(value: Any, digits: Any = 0) -> Any:
    if value is None or digits is None:
        return None
    digits = as_number(digits)
    if isinstance(digits, float):
        if not digits.is_integer():
            raise ExprError(f"round() digits must be a whole number, not {digits!r}")
        digits = int(digits)
    if abs(digits) > MAX_ROUND_DIGITS:
        raise ExprError(f"round() digits {digits} out of range (at most {MAX_ROUND_DIGITS})")
    return round(as_number(value), digits)


def _fn_len(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, (list, tuple, str, dict)):
        raise ExprError(f"len() of a {type(value).__name__} value")
    return len(value)


# name → (function, min args, max args). Arguments are evaluated before the call.
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "coalesce": (_fn_coalesce, 1, 8),
    "min": (_fn_minmax(min), 1, 8),
    "max": (_fn_minmax(max), 1, 8),
    "abs": (_fn_abs, 1, 1),
    "round": (_fn_round, 1, 2),
    "len": (_fn_len, 1, 1),
}


def logical_not(value: Any) -> Any:
    return None if value is None else not value


def negate(value: Any) -> Any:
    value = as_number(value)
    return None if value is None else -value
