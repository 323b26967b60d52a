"""The range corpus: 4,000 copies of real runs (each of the nine families at least 444 times), each
with one value that cannot be true (tests/faults/range_mutations.py), none judged as clean, none
a traceback. About three minutes of one worker on a busy 2-core machine: ``long``, run by CI's
own step (``python -m pytest -q -m "cluster or long"``). ``ADVISOR_RANGE_COPIES=N`` runs N
copies (docs/testing.md: 10,000 or more before a change to the store's ranges); the quick loop
runs a sample (test_ranges.py)."""

from __future__ import annotations

import os

import pytest
from range_mutations import FAMILIES, report, sweep

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(7200)]


def test_no_impossible_value_of_a_real_run_is_judged_as_clean(capsys):
    runs = int(os.environ.get("ADVISOR_RANGE_COPIES", "4000"))
    tally = sweep(runs=runs, seed=1)
    with capsys.disabled():
        print("\n" + report(tally, runs))
    assert sum(tally[family] for family in FAMILIES) == runs
    assert all(tally[family] >= runs // len(FAMILIES) for family in FAMILIES)
    assert not {k: v for k, v in tally.items() if ":clean" in k or k == "internal errors"}
