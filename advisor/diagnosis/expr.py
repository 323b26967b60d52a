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
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.diagnosis.expr_runtime import (  # noqa: F401 — the limits are part of this module's API
    BINOPS,
    COMPARE,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_MAGNITUDE,
    MAX_NODES,
    MAX_ROUND_DIGITS,
    MAX_SOURCE_CHARS,
    Env,
    ExprError,
    Node,
    as_number,
    logical_not,
    negate,
)


@dataclass(frozen=True)
class Expr:
    """A checked expression: its source, the facts and parameters it reads, and its evaluator."""

    source: str
    facts: frozenset[str]
    params: frozenset[str]
    _fn: Node = field(repr=False, compare=False)

    def evaluate(self, facts: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
        try:
            value = self._fn((facts, params))
        except ExprError:
            raise
        except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:
            raise ExprError(f"cannot evaluate: {type(exc).__name__}: {exc}") from None
        if isinstance(
            value, (tuple, list, dict, set)
        ):  # a rule compares one value, never a collection
            raise ExprError("gives a list, not one value: compare it, or test membership with `in`")
        return value


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
                    f"forbidden attribute access {part!r} (dunder and private names are not "
                    "allowed)"
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
            return lambda env: logical_not(operand(env))
        if isinstance(node.op, ast.USub):
            return lambda env: negate(operand(env))
        if isinstance(node.op, ast.UAdd):
            return lambda env: as_number(operand(env))
        raise ExprError(f"forbidden operator: {type(node.op).__name__}")

    def _c_BinOp(self, node: ast.BinOp) -> Node:
        op = BINOPS.get(type(node.op))
        if op is None:
            raise ExprError(f"forbidden operator: {type(node.op).__name__}")
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant):
            exponent = node.right.value
            if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
                raise ExprError(f"exponent {exponent!r} too large (at most {MAX_EXPONENT})")
        left, right = self.compile(node.left), self.compile(node.right)

        def binop(env: Env) -> Any:
            a, b = as_number(left(env)), as_number(right(env))
            if a is None or b is None:
                return None
            try:
                return as_number(op(a, b))
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
            elif type(op) not in COMPARE:
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
                        ok = COMPARE[type(op)](left, right)
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
    """Parse and check ``source``; raise :class:`ExprError` with the reason when it is not
    allowed."""
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
    except ExprError:  # a ValueError too: the compiler's own refusal, said as it is
        raise
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
