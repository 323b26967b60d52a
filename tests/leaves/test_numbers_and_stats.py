"""The leaves every view formats and summarises with: ``advisor.numbers`` and ``advisor.stats``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.numbers import MISSING, percent
from advisor.stats import median, percentile, percentiles


@pytest.mark.parametrize(
    "value, kwargs, text",
    [
        (12.345, {}, "12.3%"),
        (0.125, {"fraction": True}, "12.5%"),
        (0.78, {"digits": 0, "fraction": True}, "78%"),
        (-0.08, {"digits": 0, "fraction": True, "signed": True}, "-8%"),
        (4.28, {"digits": 0, "fraction": True, "signed": True}, "+428%"),
        (None, {}, MISSING),
        (math.nan, {"fraction": True}, MISSING),
    ],
)
def test_a_share_is_written_one_way(value, kwargs, text):
    assert percent(value, **kwargs) == text


def test_unknown_is_never_written_as_zero():
    assert percent(None) != percent(0.0) == "0.0%"


def test_percentiles_interpolate_as_numpy_does():
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for q in (0, 10, 37.5, 50, 90, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentiles(values, (10, 50, 90)) == [percentile(values, q) for q in (10, 50, 90)]
    with pytest.raises(ValueError):
        percentile([], 50)


def test_a_median_leaves_out_what_is_unknown():
    assert median([3.0, None, 1.0, math.nan, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert median([None, math.inf]) is None
