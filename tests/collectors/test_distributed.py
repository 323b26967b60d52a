"""Rank and world size from the launchers' environments."""

from __future__ import annotations


def test_rank_detection_order():
    from advisor.collectors.distributed import detect_rank_world

    assert detect_rank_world({}) == (0, 1)
    assert detect_rank_world({"HOROVOD_RANK": "2", "HOROVOD_SIZE": "4"}) == (2, 4)
    assert detect_rank_world({"SLURM_PROCID": "1", "SLURM_NTASKS": "8"}) == (1, 8)
    assert detect_rank_world({"ADVISOR_RANK": "3", "ADVISOR_WORLD_SIZE": "4", "SLURM_PROCID": "0"}) == (3, 4)
    tf_config = '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}'
    assert detect_rank_world({"TF_CONFIG": tf_config}) == (1, 2)
    chief = '{"cluster": {"chief": ["c:0"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'
    assert detect_rank_world({"TF_CONFIG": chief}) == (1, 2)
    assert detect_rank_world({"TF_CONFIG": "not json"}) == (0, 1)
