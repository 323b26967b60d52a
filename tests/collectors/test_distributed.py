"""Rank and world size from the launchers' environments."""

from __future__ import annotations


def test_rank_detection_order():
    from advisor.probes.distributed import detect_rank_world

    assert detect_rank_world({}) == (0, 1)
    assert detect_rank_world({"HOROVOD_RANK": "2", "HOROVOD_SIZE": "4"}) == (2, 4)
    assert detect_rank_world({"SLURM_PROCID": "1", "SLURM_NTASKS": "8"}) == (1, 8)
    assert detect_rank_world(
        {"ADVISOR_RANK": "3", "ADVISOR_WORLD_SIZE": "4", "SLURM_PROCID": "0"}
    ) == (3, 4)
    tf_config = '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}'
    assert detect_rank_world({"TF_CONFIG": tf_config}) == (1, 2)
    chief = (
        '{"cluster": {"chief": ["c:0"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'
    )
    assert detect_rank_world({"TF_CONFIG": chief}) == (1, 2)
    assert detect_rank_world({"TF_CONFIG": "not json"}) == (0, 1)


def test_batch_sizes_by_how_each_strategy_feeds(monkeypatch):
    """tf.distribute: fit sees the global batch; Horovod / JAX multi-process: each its own share."""
    from types import SimpleNamespace

    from advisor.collectors import context
    from advisor.collectors.options import AdvisorOptions
    from advisor.collectors.session import DataInfo, Notes

    def session(strategy, replicas, workers, batch=64):
        monkeypatch.setattr(context, "_strategy", lambda model, s: (strategy, replicas))
        return SimpleNamespace(
            model=object(),
            backend="tensorflow",
            keras_flavor="keras3",
            num_workers=workers,
            data=DataInfo(batch_size=batch),
            steps_per_execution=1,
            fit_callbacks=[],
            options=AdvisorOptions(),
            notes=Notes(),
        )

    v = context.introspect(session("MultiWorkerMirroredStrategy", 4, 2))
    assert (v["context.global_batch_size"], v["context.per_replica_batch_size"]) == (64, 16)
    v = context.introspect(session("Horovod", 2, 2))
    assert (v["context.global_batch_size"], v["context.per_replica_batch_size"]) == (128, 64)
    v = context.introspect(session("DataParallel", 4, 2))  # 2 processes × 2 local devices
    assert (v["context.global_batch_size"], v["context.per_replica_batch_size"]) == (128, 32)
    v = context.introspect(session("MirroredStrategy", 2, 1))
    assert (v["context.global_batch_size"], v["context.per_replica_batch_size"]) == (64, 32)
