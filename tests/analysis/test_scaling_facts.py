"""Facts of a run within its sweep (the facts the D6 rules read)."""

from __future__ import annotations

import pytest
from scaling_fixtures import write_run, write_sweep_runs

from advisor.analysis.facts.scaling import FACTS
from advisor.service import RunService


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("facts") / "runs"
    write_sweep_runs(root)
    return root


def facts_of(path):
    facts, errors = RunService().facts(path)
    assert errors == []
    return facts


def test_largest_configuration_against_the_smallest(runs):
    f = facts_of(runs / "sweep-fixture-mirrored-n4-r0")
    assert f["scaling.points"] == 5 and f["scaling.strategies"] == 2
    assert f["scaling.workers"] == 4 and f["scaling.baseline_workers"] == 1
    assert f["scaling.speedup"] == pytest.approx(5.0 / 1.6)
    assert f["scaling.efficiency"] == pytest.approx(5.0 / 1.6 / 4)
    assert f["scaling.per_replica_batch_shrinks"] is False
    # samples/$ at N=4 ÷ at N=1 (mean of the two repeats), one instance at the same price.
    n1 = (8192 / 13 + 8192 / 15) / 2
    assert f["scaling.samples_per_dollar_ratio"] == pytest.approx((8192 / 10.6) / n1)
    # step time 10.6 s / 32 steps vs the repeats' mean at N=1
    assert f["scaling.step_time_ratio"] == pytest.approx((10.6 / 32) / ((13 / 128 + 15 / 128) / 2))
    assert f["cluster.instances"] == 1
    assert "scaling.communication_growth" not in f  # no traces: absent, not 0


def test_stragglers_and_baseline(runs):
    f = facts_of(runs / "sweep-fixture-jax-n2-r0")
    assert f["workers.step_time_spread"] == pytest.approx(0.2)
    base = facts_of(runs / "sweep-fixture-jax-n1-r0")
    assert base["scaling.efficiency"] == pytest.approx(1.0)
    assert "workers.step_time_spread" not in base  # one worker: no spread


def test_shrinking_per_replica_batch(tmp_path):
    root = tmp_path / "runs"
    # Fixed global batch 128: 64 steps at N=1, still 64 steps at N=2 (64 per replica).
    write_run(
        root,
        "a",
        sweep_id="s",
        strategy="mirrored",
        workers=1,
        epochs=[2.0, 2.0],
        samples_per_epoch=8192,
        steps_per_epoch=64,
    )
    write_run(
        root,
        "b",
        sweep_id="s",
        strategy="mirrored",
        workers=2,
        epochs=[2.0, 1.5],
        samples_per_epoch=8192,
        steps_per_epoch=64,
    )
    f = facts_of(root / "b")
    assert f["scaling.per_replica_batch_shrinks"] is True
    assert f["scaling.strategies"] == 1 and f["scaling.efficiency"] == pytest.approx(2.0 / 1.5 / 2)


def test_run_outside_a_sweep_has_no_sweep_facts(tmp_path):
    root = tmp_path / "runs"
    write_run(
        root,
        "lone",
        sweep_id=None,
        strategy="mirrored",
        workers=1,
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
    )
    f = facts_of(root / "lone")
    assert not any(k.startswith("scaling.") for k in f if k != "scaling.keras3_multiworker")
    assert f["scaling.keras3_multiworker"] is False
    assert f["cluster.instances"] == 1


def test_every_derived_name_is_declared(runs):
    names = {fact.name for fact in FACTS}
    f = facts_of(runs / "sweep-fixture-mirrored-n2-r0")
    assert {k for k in f if k.startswith(("scaling.", "cluster.", "workers."))} <= names


@pytest.mark.parametrize("legacy,expected", [(False, True), (True, False)])
def test_keras3_under_multiworker_mirrored(tmp_path, legacy, expected):
    root = tmp_path / "runs"
    write_run(
        root,
        "k",
        sweep_id=None,
        strategy="multiworker",
        workers=1,
        manifest_strategy="CollectiveAllReduceStrategy",
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
        manifest_extra={"framework": {"backend": "tensorflow", "legacy_keras": legacy}},
    )
    assert facts_of(root / "k")["scaling.keras3_multiworker"] is expected
