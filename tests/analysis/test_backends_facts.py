"""Backend what-if records → facts → G560 (faster-backend): the fastest other candidate, its
speedup over the run's own and the band, from a record written as the what-if writes it."""

from __future__ import annotations

import pytest
from whatif_fixtures import backends_facts

from advisor.diagnosis import evaluate, load_rules
from advisor.experiments.backends.result import (
    FAILED,
    MEASURED,
    BackendCandidate,
    BackendsResult,
    Config,
)


def _result(own: str, rates: dict[str, list[float]]) -> BackendsResult:
    result = BackendsResult(own, 64, 32, seconds=40.0)
    for name, rounds in rates.items():
        result.candidates[name] = BackendCandidate(
            Config.parse(name), MEASURED, rounds=rounds, compile_seconds=0.6
        )
    result.candidates["torch"] = BackendCandidate(
        Config("torch", False), FAILED, "cannot rebuild the model on torch: X"
    )
    return result


def _facts(tmp_path, result: BackendsResult) -> dict:
    return backends_facts(tmp_path, result)


def _g560(facts: dict):
    rule = next(r for r in load_rules() if r.code == "G560")
    return evaluate(rule, facts)


def test_a_faster_backend_outside_its_band_fails_g560(tmp_path):
    facts = _facts(
        tmp_path,
        _result(
            "tensorflow",
            {"tensorflow": [100, 101, 99, 100, 100], "jax+jit": [200, 202, 198, 200, 200]},
        ),
    )
    assert facts["backends.own"] == "tensorflow" and facts["backends.best"] == "jax+jit"
    assert facts["backends.best_speedup"] == pytest.approx(2.0)
    assert facts["backends.best_band"] == pytest.approx(
        0.0
    )  # the paired ratios: 2.0 in every round
    assert facts["backends.best_change"] == "KERAS_BACKEND=jax, jit_compile=True"
    assert facts["backends.measured"] == 2
    assert [row["candidate"] for row in facts["backends.table"]] == [
        "jax+jit",
        "tensorflow",
        "torch",
    ]
    finding = _g560(facts)
    assert finding.status == "fail" and "jax+jit" in finding.message and "2.00×" in finding.message


def test_the_own_fastest_or_within_noise_passes(tmp_path):
    facts = _facts(
        tmp_path,
        _result("jax+jit", {"jax+jit": [200, 201, 199, 200], "tensorflow": [150, 151, 149, 150]}),
    )
    assert facts["backends.best_speedup"] == pytest.approx(0.75)
    assert _g560(facts).status == "pass"


def test_a_machine_slowing_down_in_some_rounds_does_not_widen_the_paired_band(tmp_path):
    own, jax = [100, 60, 100, 60, 100, 60], [130, 78, 130, 78, 130, 78]  # 1.3× in every pass
    facts = _facts(tmp_path, _result("tensorflow", {"tensorflow": own, "jax+jit": jax}))
    assert facts["backends.best_speedup"] == pytest.approx(1.3) and facts[
        "backends.best_band"
    ] == pytest.approx(0.0)
    assert _g560(facts).status == "fail"  # unpaired, the two 25% bands added would hide the 1.3×


def test_rounds_that_do_not_pair_up_add_the_two_bands(tmp_path):
    facts = _facts(
        tmp_path,
        _result(
            "tensorflow", {"tensorflow": [100, 101, 99, 100, 100], "jax+jit": [200, 202, 198, 200]}
        ),
    )
    assert facts["backends.best_speedup"] == pytest.approx(2.0)
    assert facts["backends.best_band"] == pytest.approx(0.01 + 0.01)
