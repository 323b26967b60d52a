"""A worker group Ray can never place fails at once, saying what is missing: on a real one-CPU
local Ray instance, a 2-worker configuration is failed before any placement group waits (the
CPUs it has but are busy are still waited for: ``PLACEMENT_TIMEOUT_S``)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from advisor.launch.plan import Config, local_processes
from advisor.launch.ray_cluster import placement_shortfall

NODE = {"Alive": True, "Resources": {"CPU": 2.0, "memory": 1e9}}


def test_the_shortfall_counts_the_cpus_of_live_nodes():
    assert placement_shortfall([NODE], 2) is None
    dead = {"Alive": False, "Resources": {"CPU": 64.0}}
    missing = placement_shortfall([NODE, dead], 3)
    assert missing.startswith(
        "Ray cannot place 3 worker(s) of one CPU each: the cluster has 2 CPU(s)"
    )
    assert "on 1 live node(s), 1 missing" in missing


@pytest.mark.slow  # starts a Ray instance
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")
def test_a_group_the_cluster_cannot_hold_fails_at_once(tmp_path):
    from advisor.launch.ray_cluster import ray_session, run_on_ray

    config = Config("jax", 2)
    with ray_session(None, 1) as session:
        outcome = run_on_ray(
            session.ray,
            config,
            lambda **where: local_processes(
                config, [sys.executable, "-c", "pass"], "s", tmp_path, **where
            ),
            tmp_path / "logs",
            timeout_s=60,
        )
    assert outcome.status == "failed"
    assert outcome.reason.startswith("Ray cannot place 2 worker(s) of one CPU each")
    assert "1 missing" in outcome.reason and outcome.seconds == 0.0
