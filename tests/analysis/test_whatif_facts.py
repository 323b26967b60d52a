"""What-if records → facts: paired speedups with their bands, reasons, the table (no training)."""

from __future__ import annotations

import pytest
from whatif_fixtures import input_bound_run, whatif_record

from advisor.analysis.facts.whatif import CANDIDATES
from advisor.analysis.registry import registry
from advisor.store.reader import RunReader


def _facts(tmp_path, record=None):
    run = RunReader(input_bound_run(tmp_path, record)).read()
    facts, errors = registry().derive(run)
    assert errors == []
    return facts


def test_every_candidate_the_engine_tries_has_its_facts():
    """The engine's trials (advisor.experiments.whatif), the named candidates and facts agree."""
    from advisor.experiments.whatif.engine import candidates

    assert tuple(c.name for c in candidates()) == CANDIDATES
    facts = registry()
    missing = [
        n for n in CANDIDATES for kind in ("speedup", "band") if f"whatif.{n}.{kind}" not in facts
    ]
    assert missing == []


def test_speedup_is_the_median_paired_ratio_and_its_band_a_share_of_it(tmp_path):
    facts = _facts(tmp_path)
    assert facts["whatif.parallel_map.speedup"] == pytest.approx(2.4)
    assert facts["whatif.parallel_map.band"] == pytest.approx(
        0.0, abs=1e-9
    )  # the same ratio every round
    assert facts["whatif.parallel_map.outside_band"] is True
    assert facts["whatif.parallel_map.seconds"] == pytest.approx(3.1)
    assert facts["whatif.parallel_map.samples_per_s"] == pytest.approx(240.0)
    # prefetch: ratios 1.01, 0.97, 1.02, 1.02, 0.98, 1.0 → median 1.005, band [0.97, 1.02]
    assert facts["whatif.prefetch.speedup"] == pytest.approx(1.005, abs=1e-3)
    assert facts["whatif.prefetch.band"] == pytest.approx(0.035 / 1.005, abs=1e-3)
    assert facts["whatif.prefetch.outside_band"] is False
    assert facts["whatif.best"] == "cache_map" and facts["whatif.best_speedup"] == pytest.approx(
        40.0
    )
    assert facts["whatif.unchanged_samples_per_s"] == pytest.approx(100.0)
    assert facts["whatif.share_of_fit"] == pytest.approx(12.5 / 250.0)
    assert facts["whatif.measured"] == 3


def test_candidates_not_measured_keep_their_status_and_reason(tmp_path):
    facts = _facts(tmp_path)
    assert facts["whatif.jit_compile.status"] == "not_relevant"
    assert "98%" in facts["whatif.jit_compile.reason"]
    assert (
        facts["whatif.batch_x2.status"] == "failed"
        and "out of memory" in facts["whatif.batch_x2.reason"]
    )
    assert "whatif.batch_x2.speedup" not in facts and "whatif.jit_compile.speedup" not in facts


def test_the_table_lists_measured_gains_first_and_ignores_unknown_candidates(tmp_path):
    table = _facts(tmp_path)["whatif.table"]
    assert [row["candidate"] for row in table] == [
        "cache_map",
        "parallel_map",
        "prefetch",
        "jit_compile",
        "batch_x2",
    ]
    assert table[0]["speedup"] == pytest.approx(40.0) and table[-1]["speedup"] is None


def test_a_skipped_whatif_says_why(tmp_path):
    record = whatif_record(
        candidates=[], unchanged_rounds=None, rounds=None, skipped="2 workers: …"
    )
    facts = _facts(tmp_path, record)
    assert facts["whatif.skipped"] == "2 workers: …" and facts["whatif.measured"] == 0
    assert "whatif.best" not in facts
