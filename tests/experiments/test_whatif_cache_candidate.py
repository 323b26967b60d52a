"""The what-if tries the cache whenever the baseline measured an input cost beyond its noise band,
even after a map whose graph looks cheap: the cost may lie anywhere before the cache (windowing,
interleaving, the source), and the cache takes it all away. A windowed LSTM forecaster's input
cost 38% ± 17% and its mapped windows looked cheap; the cache was skipped as "cheap" while
adding it by hand made epochs 1.55× faster. Without a measured cost a cheap map is still left
out of "auto", and so is every input change when the baseline measured none. No training: the
candidates' relevance is read from the situation (the real fit is the LSTM family's ``long``
test)."""

from __future__ import annotations

import pytest

from advisor.experiments.whatif.inputs import CANDIDATES
from advisor.experiments.whatif.trials import Situation, Trial

RELEVANT = {c.name: c.relevant for c in CANDIDATES}
# timeseries_dataset_from_array's windows, a cheap deterministic map, batched and prefetched
STAGES = [
    {"kind": "source", "ordinal": 1},
    {"kind": "map", "ordinal": 1, "fn": "split_window", "fn_ops": 6, "random": False},
    {"kind": "batch", "ordinal": 1},
    {"kind": "prefetch", "ordinal": 1},
]


def _situation(cost: float | None, outside: bool | None) -> Situation:
    unchanged = Trial("unchanged", "as trained", None, {}, finite=True, batch_size=64)
    return Situation(
        model=None,
        backend="tensorflow",
        flavor="keras3",
        kind="tf.data",
        unchanged=unchanged,
        batch_size=64,
        dataset=object(),  # present; relevance reads only the graph summary
        summary={"stages": STAGES},
        input_cost=cost,
        input_cost_outside_band=outside,
    )


@pytest.mark.parametrize("cost", [0.38, 0.12, 0.84])
def test_a_measured_input_cost_makes_the_cache_a_candidate_after_a_cheap_map(cost):
    assert RELEVANT["cache_map"](_situation(cost, True)) is None


@pytest.mark.parametrize("cost,outside", [(None, None), (0.38, None)])
def test_a_cheap_map_without_a_measured_cost_is_left_out_and_says_why(cost, outside):
    reason = RELEVANT["cache_map"](_situation(cost, outside))
    assert reason == "map #1 ('split_window') is cheap: caching after it would save little"


def test_no_input_cost_beyond_the_band_leaves_even_a_heavy_map_uncached():
    situation = _situation(0.05, False)
    heavy = {**STAGES[1], "fn_ops": 40}
    situation.summary = {"stages": [STAGES[0], heavy, *STAGES[2:]]}
    assert RELEVANT["cache_map"](situation) == (
        "the baseline measured no input cost beyond its noise band: an input change cannot gain"
    )
    assert RELEVANT["cache_map"](_situation(0.38, True)) is None  # the same map, a cost measured


def test_a_pipeline_already_cached_after_the_map_has_nothing_to_cache():
    situation = _situation(0.38, True)
    situation.summary = {"stages": [*STAGES[:2], {"kind": "cache"}, *STAGES[2:]]}
    reason = RELEVANT["cache_map"](situation)
    assert reason == "the pipeline has no deterministic map without a cache after it"
