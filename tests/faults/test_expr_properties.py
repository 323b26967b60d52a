"""Property tests: any condition text compiles to an expression or is refused with an
ExprError, and any compiled expression evaluates on any facts to a value or an ExprError —
within a time limit, never another exception and never a hang.

The deep fuzzer (`test_many_*`, slow) draws a fifth of its 3000 examples in the suite's run,
the same ones every run (the `replay` profile); `ADVISOR_HYPOTHESIS=explore` draws all
3000 anew, `ADVISOR_FUZZ_EXAMPLES=N` draws N (tests/faults/fault_helpers.py)."""

from __future__ import annotations

import pytest
from fault_helpers import assert_one_clear_line, examples, fuzz_examples, time_limit
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.diagnosis.expr import ExprError, compile_expr

pytestmark = pytest.mark.timeout(600, method="thread")  # a hang inside C code ends the run

FACTS = [
    "gpu.util.p95",
    "input.bound_fraction",
    "pipeline.sequential_maps",
    "pipeline.advice",
    "throughput.samples_per_s",
    "context.callbacks",
]
PARAMS = {"warn_fraction": 0.1, "limit": 3, "name": "x"}
NUMBERS = [
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "1e308",
    "1e300",
    "1e-300",
    "9" * 300,
    "10",
    "100000000",
    "100",
    "-100000000",
    "3",
    "0.1",
]
FUNCTIONS = ["round", "min", "max", "abs", "len", "coalesce", "eval", "__import__", "open"]
OPERATORS = [
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "<",
    "<=",
    "==",
    "!=",
    ">",
    ">=",
    "and",
    "or",
    "in",
    "not in",
    "is",
    "is not",
    "<<",
    "@",
    "|",
]

leaf = (
    st.sampled_from(
        NUMBERS
        + FACTS
        + list(PARAMS)
        + ["None", "True", "False", '"s"', "''", "__class__", "_x", "unknown", "os"]
    )
    | st.integers(-(10**6), 10**6).map(str)
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(inner, inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(OPERATORS), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        inner.map(lambda a: f"(not {a})"),
        inner.map(lambda a: f"(-{a})"),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(inner, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        pair.map(lambda t: f"({t[0]}, {t[1]})"),
        pair.map(lambda t: f"{t[0]}[{t[1]}]"),
        inner.map(lambda a: f"(lambda: {a})"),
        inner.map(lambda a: f"{a}.__class__"),
        inner.map(lambda a: f"[{a} for _ in (1,)]"),
    )


expressions = st.recursive(leaf, _extend, max_leaves=25) | st.text(max_size=120)
fact_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(10**400), 10**400),
    st.floats(),
    st.sampled_from([float("nan"), float("inf"), 1e308, -0.0]),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=4),
)


def _compile_and_evaluate(source: str, facts: dict) -> None:
    with time_limit(5):
        try:
            expr = compile_expr(source, set(FACTS), PARAMS, FACTS)
        except ExprError as exc:
            assert_one_clear_line(exc)
            return
        try:
            value = expr.evaluate(facts, PARAMS)
        except ExprError as exc:
            assert_one_clear_line(exc)
            return
    assert value is None or isinstance(
        value, (bool, int, float, str)
    )  # a value the rules can compare


@settings(max_examples=examples(300))
@given(source=expressions, facts=st.dictionaries(st.sampled_from(FACTS), fact_values))
def test_any_expression_compiles_and_evaluates_or_is_refused(source, facts):
    _compile_and_evaluate(source, facts)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(3000))
@given(source=expressions, facts=st.dictionaries(st.sampled_from(FACTS), fact_values))
def test_many_expressions(source, facts):
    _compile_and_evaluate(source, facts)


@pytest.mark.parametrize(
    "source,error,value",
    [
        (
            "round(coalesce(pipeline.sequential_maps, 1), -100000000)",
            "round() digits -100000000 out of range",
            None,
        ),
        ("round(1, 100000000)", "round() digits 100000000 out of range", None),
        (
            "round(pipeline.sequential_maps, limit * 100000000)",
            "round() digits 300000000 out of range",
            None,
        ),
        ("999999 ** 100 * 999999 ** 100", "number out of range: an integer of 600 digits", None),
        (
            "(10 ** 100) * (10 ** 100) * (10 ** 100) * (10 ** 100)",
            "number out of range: an integer of 401 digits",
            None,
        ),
        ("0 ** -1", None, None),  # undefined, like x / 0: unknown, not an error
        ("1" + " + 1" * 600, "expression longer than 2000 characters", None),
        ("-" * 500 + "1", "expression nested too deeply", None),
        ("(" * 150 + "1" + ")" * 150, None, 1),
    ],
)
def test_costly_expressions_are_refused_or_cheap(source, error, value):
    """Each of these ran for minutes, raised outside ExprError, or recursed before the limits:
    now each is refused with a message that says why (``error``), or evaluates at once."""
    _compile_and_evaluate(source, {"pipeline.sequential_maps": 3})
    with time_limit(1):
        try:
            got = compile_expr(source, set(FACTS), PARAMS, FACTS).evaluate(
                {"pipeline.sequential_maps": 3}, PARAMS
            )
        except ExprError as exc:
            assert error is not None and error in str(exc), (error, str(exc))
            return
    assert error is None and got == value, (error, got)
