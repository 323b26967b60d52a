"""Why a function was traced again, from each backend's own words: signature differences
(TensorFlow), JAX's cache-miss explanations and compile lines, torch's failed guards; and the
first-step wait that an epoch start is charged with. Pure functions over real-format inputs."""

from __future__ import annotations

import pytest

from advisor.collectors.compile_causes import Leaf, PartialBatches, cause_of
from advisor.collectors.compile_jax import avals_leaves, cause_from_explanation, union_seconds
from advisor.collectors.compile_torch import cause_from_guard
from advisor.collectors.windows import first_step_wait, interval_stats


def _tensor(path, shape, dtype="float32"):
    return Leaf(path, "tensor", shape, dtype)


@pytest.mark.parametrize(
    ("before", "now", "cause", "says"),
    [
        ([_tensor("x", (32, 8))], [_tensor("x", (32, 8), "float64")], "dtype", "float64"),
        (
            [_tensor("x", (32, 8)), Leaf("step", "value", None, "41")],
            [_tensor("x", (32, 8)), Leaf("step", "value", None, "42")],
            "python_value",
            "step: 41 → 42",
        ),
        ([_tensor("x", (32, 8))], [_tensor("x", (10, 8))], "partial_batch", "(10, 8)"),
        ([_tensor("x", (32, 8))], [_tensor("x", (32, 12))], "shape", "(32, 8) → (32, 12)"),
        ([_tensor("x", (32, 8))], [_tensor("x", (64, 8))], "shape", "(64, 8)"),
        ([_tensor("x", (32, 8))], [_tensor("x", (32, 8)), _tensor("y", (32,))], "structure", "y"),
        ([_tensor("x", (32, 8))], [_tensor("x", (32, 8))], "other", "same input signature"),
    ],
)
def test_the_cause_is_the_first_difference_of_the_signatures(before, now, cause, says):
    found, detail = cause_of(before, now, largest_batch=32)
    assert found == cause
    assert says in detail


def test_a_second_smaller_batch_size_is_a_varying_batch_not_the_last_batch():
    sizes = PartialBatches()
    assert sizes.refine("step", "partial_batch", 10) == "partial_batch"
    assert sizes.refine("step", "partial_batch", 10) == "partial_batch"  # next epoch, same size
    assert sizes.refine("step", "partial_batch", 20) == "shape"
    assert sizes.refine("other", "shape", 5) == "shape"


def test_jax_explanations_and_compile_lines_name_the_cause():
    static = (
        "TRACING CACHE MISS at train.py:8 (<module>):\n  for step defined at train.py:4\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
        "  different input pytree:\n  * at input path [0][1], now <class "
        "'jax._src.tree_util.Static'> with pytree metadata Static(val=2) and before <class "
        "'jax._src.tree_util.Static'> with pytree metadata Static(val=1), so the pytree node "
        "metadata does not match"
    )
    cause, detail = cause_from_explanation(static)
    assert cause == "static_argument" and "Static(val=2)" in detail
    types = static.replace("different input pytree:", "different input types:").replace(
        "Static(val=2)", "f32[4]"
    )
    assert cause_from_explanation(types.replace("Static(val=1)", "f32[3]"))[0] == "shape"
    assert cause_from_explanation("TRACING CACHE MISS at x:\n  never seen function:")[0] == (
        "new_function"
    )
    line = (
        "Compiling jit_train_step with global shapes and types [ShapedArray(float32[64,56,8]), "
        "ShapedArray(int64[64])]. Argument mapping: (UnspecifiedValue, UnspecifiedValue)."
    )
    leaves = avals_leaves(line)
    assert [(leaf.shape, leaf.text) for leaf in leaves] == [
        ((64, 56, 8), "float32"),
        ((64,), "int64"),
    ]


def test_torch_guards_name_the_cause():
    size = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 6"
    assert cause_from_guard(size) == (
        "partial_batch",
        "tensor 'x' size mismatch at index 0. expected 8, actual 6",
    )
    assert cause_from_guard("0/1: tensor 'x' size mismatch at index 1. expected 8, actual 9")[
        0
    ] == ("shape")
    value = "0/1: n == 2                                   #   # train.py:8 in step\nUser stack"
    assert cause_from_guard(value) == ("python_value", "n == 2")
    assert cause_from_guard("0/2: tensor 'x' dtype mismatch. expected Float, actual Double")[0] == (
        "dtype"
    )


def test_nested_compile_stages_count_once():
    assert union_seconds([(0.0, 1.0), (0.2, 0.5), (1.0, 1.5), (3.0, 4.0)]) == pytest.approx(2.5)
    assert union_seconds([]) == 0.0


def test_an_epochs_first_step_that_waits_for_input_is_taken_out_of_the_steps():
    steps = [0.0] + [1.2 + 0.02 * i for i in range(1, 40)]  # a 1.22 s first step, then 20 ms
    wait = first_step_wait(steps)
    assert wait == pytest.approx(1.2, abs=1e-9)  # 1.22 s less a usual step
    moved = [steps[0] + wait, *steps[1:]]
    assert interval_stats(moved)["step_outliers"] == 0
    assert interval_stats(steps)["step_outliers"] == 1  # without the move: one outlier


@pytest.mark.parametrize(
    "stamps",
    [
        [0.02 * i for i in range(40)],  # no wait
        [0.0, 0.05, 0.07, 0.09],  # too few steps after it to judge
        [0.0, 0.03] + [0.03 + 0.02 * i for i in range(1, 30)],  # 1.5 steps: not a wait
    ],
)
def test_no_wait_is_found_where_the_first_step_is_usual(stamps):
    assert first_step_wait(stamps) == 0.0


def test_a_compile_inside_the_first_step_is_no_wait_for_input():
    from advisor.collectors.throughput import _less_compiles

    stamps = [10.0, 11.2, 11.22, 11.24]
    assert _less_compiles(1.18, stamps, [(11.1, 1.0)]) == pytest.approx(0.18)
    assert _less_compiles(1.18, stamps, [(11.1, 1.17)]) == 0.0  # what is left is no wait
    assert _less_compiles(1.18, stamps, [(9.0, 1.0), (11.3, 1.0)]) == pytest.approx(1.18)
