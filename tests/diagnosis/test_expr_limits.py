"""The rule language's cost limits, one by one, each at its edge: the largest accepted value
works, the next is refused with the reason."""

from __future__ import annotations

import pytest

from advisor.diagnosis.expr import MAX_DEPTH, MAX_NODES, MAX_ROUND_DIGITS, ExprError, compile_expr
from advisor.service import diagnose

FACTS = {"x", "y"}


def value(source: str, **facts):
    return compile_expr(source, FACTS).evaluate(facts, {})


def test_round_digits_are_bounded_both_ways():
    assert value(f"round(x, {MAX_ROUND_DIGITS})", x=1.5) == 1.5
    assert value(f"round(x, -{MAX_ROUND_DIGITS})", x=10**20) == 10**20
    for digits in (MAX_ROUND_DIGITS + 1, -MAX_ROUND_DIGITS - 1, -100000000):
        with pytest.raises(ExprError, match="round\\(\\) digits .* out of range"):
            value(f"round(x, {digits})", x=3)
    with pytest.raises(ExprError, match="whole number"):
        value("round(x, 0.5)", x=3)
    assert value("round(x, y)", x=3, y=None) is None


def test_integers_are_bounded_like_floats():
    assert value("x * 10", x=10**290) == 10**291
    with pytest.raises(ExprError, match="an integer of 401 digits"):
        value("x * x", x=10**200)
    with pytest.raises(ExprError, match="number out of range"):
        value("x + 1", x=10**400)


def test_size_and_nesting_are_bounded():
    wide = "x in ({})".format  # flat: many nodes, two levels deep
    assert compile_expr(wide(", ".join(["1"] * (MAX_NODES - 3))), FACTS)
    with pytest.raises(ExprError, match="too large"):
        compile_expr(wide(", ".join(["1"] * MAX_NODES)), FACTS)
    assert compile_expr(" + ".join(["x"] * MAX_DEPTH), FACTS)  # a sum is as deep as it is long
    with pytest.raises(ExprError, match="nested too deeply"):
        compile_expr(" + ".join(["x"] * (MAX_DEPTH + 1)), FACTS)
    assert compile_expr("-" * (MAX_DEPTH - 1) + "x", FACTS)
    with pytest.raises(ExprError, match="nested too deeply"):
        compile_expr("-" * MAX_DEPTH + "x", FACTS)


def test_undefined_arithmetic_is_unknown_and_type_errors_are_expr_errors():
    assert value("0 ** -1 if x else 1", x=True) is None
    with pytest.raises(ExprError):
        value("round(x, 'a')", x=1)


def test_a_nan_threshold_cannot_turn_a_failure_into_a_pass(runs_dir):
    """M108 with warn_fraction=NaN used to make every comparison False: a pass."""
    from advisor.errors import UsageError

    with pytest.raises(UsageError, match="M108.warn_fraction must be a finite number, not nan"):
        diagnose(_a_run(runs_dir), thresholds={"M108": {"warn_fraction": float("nan")}})


def _a_run(runs_dir):
    import time

    from advisor.store.schema import WindowRecord
    from advisor.store.writer import RunWriter

    w = RunWriter(runs_dir, manifest={})
    w.write(WindowRecord(t=time.time(), epoch=0, seconds=1.0, steps=10, step_begin=0, step_end=10))
    w.close()
    return w.path
