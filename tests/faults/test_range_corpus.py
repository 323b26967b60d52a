"""The range corpus, first half: 5,000 of the 10,000 copies of real runs (each of the nine
families at least 555 times here), each with one value that cannot be true
(tests/faults/range_mutations.py), none judged as clean, none a traceback. The other half, drawn
with another seed, is test_range_corpus_second.py: two files, so that CI's two workers share the
10,000 copies. Three to four minutes of one worker on a busy 2-core machine: ``long``, run by
CI's own step (``python -m pytest -q -m "cluster or long"``). ``ADVISOR_RANGE_COPIES=N`` runs N
copies in all (docs/testing.md: more before a change to the store's ranges); the quick loop runs
a sample (test_ranges.py)."""

from __future__ import annotations

import pytest
from range_mutations import check_shard

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(7200)]


def test_no_impossible_value_of_a_real_run_is_judged_as_clean(record_property):
    check_shard(seed=1, record_property=record_property)
