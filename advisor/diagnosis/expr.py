"""Safe rule conditions: a small expression language over facts, never Python's ``eval``.

Conditions are Python expression *syntax*, parsed with :mod:`ast` and checked against a
whitelist when the rules load: literals, arithmetic, comparisons, ``and``/``or``/``not``,
``x if c else y``, a few functions, and names. A name is a rule parameter or a registered fact;
dotted facts are written as they are named (``gpu.util.p95``). Anything else — subscripts,
lambdas, comprehensions, dunder names, attribute access that is not a fact name, unknown names,
huge exponents — is rejected at load time with the reason.

Every operation's cost is bounded, so no condition can hang the process: at most
``MAX_SOURCE_CHARS`` characters, ``MAX_NODES`` nodes nested at most ``MAX_DEPTH`` deep (there are no
loops, so an evaluation takes at most ``MAX_NODES`` steps), exponents up to ``MAX_EXPONENT``,
``round`` digits within ``MAX_ROUND_DIGITS``, and every number — integers too — within
``MAX_MAGNITUDE``. Anything else is an :class:`ExprError`, at load time where the values are
constant, else when the rule is evaluated.

Missing facts evaluate to ``None`` and propagate like SQL's NULL (three-valued logic):
``None < 3`` is ``None``, ``False and None`` is ``False``, ``True or None`` is ``True``. A
condition that ends in ``None`` could not be decided: the rule's status is *unknown*.
``x is None`` / ``x is not None`` always answer True or False.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Expr:
    """A checked expression: its source, the facts and parameters it reads, and its evaluator."""

    source: str
    facts: frozenset[str]
    params: frozenset[str]
    _fn: Node = field(repr=False, compare=False)

    def evaluate(self, facts: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
        try:
            return self._fn((facts, params))
        except ExprError:
            raise
        except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:
            raise ExprError(f"cannot evaluate: {type(exc).__name__}: {exc}") from None


# -- runtime helpers (three-valued logic) ---------------------------------------------------


def _num(value: Any) -> Any:
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


_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _div,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
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
        known = [_num(v) for v in values if v is not None]
        return pick(known) if known else None

    return fn


def _fn_abs(value: Any) -> Any:
    return None if value is None else abs(_num(value))


def _fn_round(value: Any, digits: Any = 0) -> Any:
    if value is None or digits is None:
        return None
    digits = _num(digits)
    if isinstance(digits, float):
        if not digits.is_integer():
            raise ExprError(f"round() digits must be a whole number, not {digits!r}")
        digits = int(digits)
    if abs(digits) > MAX_ROUND_DIGITS:
        raise ExprError(f"round() digits {digits} out of range (at most {MAX_ROUND_DIGITS})")
    return round(_num(value), digits)


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


# -- the compiler -----------------------------------------------------------------------------


class _Compiler:
    def __init__(
        self, fact_names: Container[str], param_names: Container[str], known: Iterable[str]
    ):
        self.fact_names = fact_names
        self.param_names = param_names
        self.known = list(known)
        self.facts: set[str] = set()
        self.params: set[str] = set()

    def compile(self, node: ast.AST) -> Node:
        method = getattr(self, f"_c_{type(node).__name__}", None)
        if method is None:
            raise ExprError(f"forbidden construct: {_describe(node)}")
        fn: Node = method(node)
        if isinstance(node, ast.BinOp) and not any(
            isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(node)
        ):
            fn(({}, {}))  # constant arithmetic runs now: 9 ** 9 ** 9 fails at load time
        return fn

    # names and facts
    def _name(self, name: str) -> Node:
        if name.startswith("_"):
            raise ExprError(f"forbidden name {name!r} (names starting with '_' are not allowed)")
        if name in self.param_names:
            self.params.add(name)
            return lambda env: env[1][name]
        if name in self.fact_names:
            self.facts.add(name)
            return lambda env: env[0].get(name)
        if name in FUNCTIONS:
            raise ExprError(f"function {name!r} must be called")
        hint = difflib.get_close_matches(name, self.known, n=1)
        more = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise ExprError(
            f"unknown name {name!r}: not a registered fact or a parameter of this rule{more}"
        )

    def _c_Name(self, node: ast.Name) -> Node:
        return self._name(node.id)

    def _c_Attribute(self, node: ast.Attribute) -> Node:
        parts: list[str] = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name):
            raise ExprError(f"forbidden attribute access on {_describe(cur)}")
        parts.append(cur.id)
        for part in parts:
            if part.startswith("_"):
                raise ExprError(
                    f"forbidden attribute access {part!r} (dunder and private names are not allowed)"
                )
        return self._name(".".join(reversed(parts)))

    def _c_Constant(self, node: ast.Constant) -> Node:
        value = node.value
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ExprError(f"forbidden constant of type {type(value).__name__}")
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and abs(value) > MAX_MAGNITUDE
        ):
            raise ExprError(f"constant {value!r} too large")
        return lambda env: value

    def _c_List(self, node: ast.List) -> Node:
        items = [self.compile(e) for e in node.elts]
        return lambda env: tuple(i(env) for i in items)

    _c_Tuple = _c_List  # type: ignore[assignment]

    # operators
    def _c_BoolOp(self, node: ast.BoolOp) -> Node:
        values = [self.compile(v) for v in node.values]
        if isinstance(node.op, ast.And):

            def and_(env: Env) -> Any:
                unknown = False
                result: Any = True
                for v in values:
                    result = v(env)
                    if result is None:
                        unknown = True
                    elif not result:
                        return False
                return None if unknown else result

            return and_

        def or_(env: Env) -> Any:
            unknown = False
            for v in values:
                result = v(env)
                if result is None:
                    unknown = True
                elif result:
                    return result
            return None if unknown else False

        return or_

    def _c_UnaryOp(self, node: ast.UnaryOp) -> Node:
        operand = self.compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: _not(operand(env))
        if isinstance(node.op, ast.USub):
            return lambda env: _neg(operand(env))
        if isinstance(node.op, ast.UAdd):
            return lambda env: _num(operand(env))
        raise ExprError(f"forbidden operator: {type(node.op).__name__}")

    def _c_BinOp(self, node: ast.BinOp) -> Node:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ExprError(f"forbidden operator: {type(node.op).__name__}")
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant):
            exponent = node.right.value
            if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
                raise ExprError(f"exponent {exponent!r} too large (at most {MAX_EXPONENT})")
        left, right = self.compile(node.left), self.compile(node.right)

        def binop(env: Env) -> Any:
            a, b = _num(left(env)), _num(right(env))
            if a is None or b is None:
                return None
            try:
                return _num(op(a, b))
            except OverflowError:
                raise ExprError("arithmetic overflow") from None

        return binop

    def _c_Compare(self, node: ast.Compare) -> Node:
        first = self.compile(node.left)
        steps: list[tuple[ast.cmpop, Node]] = []
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Is, ast.IsNot)):
                if not (
                    isinstance(comparator, ast.Constant) and comparator.value in (None, True, False)
                ):
                    raise ExprError("'is' / 'is not' may only compare with None, True or False")
            elif type(op) not in _COMPARE:
                raise ExprError(f"forbidden comparison: {type(op).__name__}")
            steps.append((op, self.compile(comparator)))

        def compare(env: Env) -> Any:
            left = first(env)
            unknown = False
            for op, right_fn in steps:
                right = right_fn(env)
                if isinstance(op, ast.Is):
                    ok: Any = left is right
                elif isinstance(op, ast.IsNot):
                    ok = left is not right
                elif left is None or right is None:
                    unknown = True
                    left = right
                    continue
                else:
                    try:
                        ok = _COMPARE[type(op)](left, right)
                    except TypeError as exc:
                        raise ExprError(f"cannot compare {left!r} and {right!r}") from exc
                if not ok:
                    return False
                left = right
            return None if unknown else True

        return compare

    def _c_IfExp(self, node: ast.IfExp) -> Node:
        test, body, orelse = (
            self.compile(node.test),
            self.compile(node.body),
            self.compile(node.orelse),
        )

        def ifexp(env: Env) -> Any:
            cond = test(env)
            if cond is None:
                return None
            return body(env) if cond else orelse(env)

        return ifexp

    def _c_Call(self, node: ast.Call) -> Node:
        if not isinstance(node.func, ast.Name):
            raise ExprError(
                f"forbidden call of {_describe(node.func)} (only {', '.join(FUNCTIONS)})"
            )
        name = node.func.id
        if name.startswith("_"):
            raise ExprError(f"forbidden call of {name!r} (names starting with '_' are not allowed)")
        spec = FUNCTIONS.get(name)
        if spec is None:
            raise ExprError(f"unknown function {name!r} (allowed: {', '.join(FUNCTIONS)})")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise ExprError(f"{name}() takes positional arguments only")
        fn, lo, hi = spec
        if not lo <= len(node.args) <= hi:
            raise ExprError(f"{name}() takes {lo}..{hi} arguments, got {len(node.args)}")
        args = [self.compile(a) for a in node.args]
        return lambda env: fn(*(a(env) for a in args))


def _not(value: Any) -> Any:
    return None if value is None else not value


def _neg(value: Any) -> Any:
    value = _num(value)
    return None if value is None else -value


def _describe(node: ast.AST) -> str:
    names = {
        "Subscript": "subscript (x[...])",
        "Lambda": "lambda",
        "ListComp": "comprehension",
        "SetComp": "comprehension",
        "DictComp": "comprehension",
        "GeneratorExp": "generator expression",
        "JoinedStr": "f-string",
        "NamedExpr": "assignment expression (:=)",
        "Dict": "dict literal",
        "Set": "set literal",
        "Starred": "starred argument",
        "Await": "await",
        "Yield": "yield",
    }
    return names.get(type(node).__name__, type(node).__name__)


def compile_expr(
    source: str,
    fact_names: Container[str],
    param_names: Container[str] = (),
    suggestions: Iterable[str] = (),
) -> Expr:
    """Parse and check ``source``; raise :class:`ExprError` with the reason when it is not allowed."""
    if not isinstance(source, str) or not source.strip():
        raise ExprError("empty expression")
    if len(source) > MAX_SOURCE_CHARS:
        raise ExprError(f"expression longer than {MAX_SOURCE_CHARS} characters")
    source = " ".join(line.strip() for line in source.strip().splitlines())  # YAML may fold lines
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error: {exc.msg} (column {exc.offset})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"cannot parse: {exc}") from None
    _check_size(tree.body)
    compiler = _Compiler(fact_names, param_names, suggestions)
    try:
        fn = compiler.compile(tree.body)
    except RecursionError:
        raise ExprError("expression nested too deeply") from None
    except (ArithmeticError, TypeError, ValueError) as exc:  # constant folding, defensively
        raise ExprError(f"cannot evaluate: {type(exc).__name__}: {exc}") from None
    return Expr(source, frozenset(compiler.facts), frozenset(compiler.params), fn)


def _check_size(root: ast.expr) -> None:
    """At most ``MAX_NODES`` expression nodes, nested at most ``MAX_DEPTH`` deep."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise ExprError(f"expression too large (more than {MAX_NODES} parts)")
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
        stack.extend(
            (child, depth + 1)
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.expr)
        )
