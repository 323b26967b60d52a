"""The range corpus, second half: 5,000 more copies of real runs, drawn with another seed than
test_range_corpus.py's (the two files run on CI's two workers side by side; together 10,000
copies, each family at least 1,110 times)."""

from __future__ import annotations

import pytest
from range_mutations import check_shard

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(7200)]


def test_no_impossible_value_of_a_real_run_is_judged_as_clean(record_property):
    check_shard(seed=2, record_property=record_property)
