"""The default what-if's decision and the analysis read the input's cost through one bound
(``bands.beyond_the_inputs_work``): a cost the input's own work cannot explain on a CPU is noise
to both (no training: the baseline's figures by hand; that the decision follows the facts on a
real fit is tests/experiments/test_whatif.py's compute-bound test)."""

from __future__ import annotations

import pytest

from advisor.noise import beyond_the_inputs_work


def test_a_fast_input_on_a_cpu_cannot_cost_a_fifth_of_the_step():
    most = beyond_the_inputs_work(0.19, 810.0, 243_000.0, 2, "cpu")
    assert most == pytest.approx(2 * 2 * 810.0 / 243_000.0) and most < 0.02
    assert beyond_the_inputs_work(0.19, 810.0, 830.0, 2, "cpu") is None  # a slow input: a real cost
    assert beyond_the_inputs_work(0.19, 810.0, 243_000.0, 2, "gpu") is None
    assert (
        beyond_the_inputs_work(0.19, 810.0, 243_000.0, 2, None) is None
    )  # device unknown: as measured
    assert (
        beyond_the_inputs_work(0.19, 810.0, None, 2, "cpu") is None
    )  # no data-only rate: as measured
