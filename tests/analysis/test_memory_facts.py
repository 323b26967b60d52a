"""Memory facts from records written by the real run writer: a shuffle buffer that fills over the
first epochs is left out and named, not called a leak; a device allocator that grows while the
process is flat is a leak of the device, its deadline taken against the device's memory; an
in-memory cache() after an endless repeat() is a leak's suspect; the peak fraction M181 reads.
(The real fits are tests/collectors/test_memory.py and the memory scenarios.)"""

from __future__ import annotations

import time

import pytest
from run_facts import derive as _derive

from advisor.diagnosis import evaluate, load_rules
from advisor.store.schema import ContextRecord, MemoryRecord, PipelineRecord

MB = 1 << 20
GB = 1 << 30
RULES = {r.code: r for r in load_rules()}


def _epochs(t0, rss_mb, devices=None, available_mb=20_000):
    return [
        MemoryRecord(
            t=t0 + i,
            epoch=i,
            seconds=1.0,
            rss_begin=int(mb * MB),
            rss=int(mb * MB),
            available=int(available_mb * MB),
            devices=devices(i) if devices else [],
        )
        for i, mb in enumerate(rss_mb)
    ]


def test_a_shuffle_buffer_that_fills_is_left_out_and_named(tmp_path):
    t0 = time.time() - 100.0
    stages = [
        {"kind": "source", "op": "TensorSliceDataset"},
        {"kind": "shuffle", "op": "ShuffleDataset", "buffer_size": 50_000},
        {"kind": "batch", "op": "BatchDataset", "batch_size": 64},
    ]
    pipeline = PipelineRecord(t=t0, values={"input_kind": "tf.data", "summary": {"stages": stages}})
    # 300 MB a epoch for the first three epochs after the first, then flat to the last (12 epochs)
    rss = [900, 1000, 1300, 1600, 1900] + [1900] * 7
    facts = _derive(tmp_path, pipeline, *_epochs(t0 + 1, rss))
    assert facts["memory.growing"] is False
    assert "a shuffle buffer filling" in facts["memory.left_out"]
    assert facts["memory.left_out"].startswith("epoch 0 (the first")
    assert facts["memory.growth_mb_per_epoch"] == pytest.approx(0.0)
    m180 = evaluate(RULES["M180"], facts)
    assert m180.status == "pass" and "a shuffle buffer filling" in m180.message


def test_a_device_that_grows_is_a_leak_with_the_devices_deadline(tmp_path):
    t0 = time.time() - 100.0

    def device(i):  # 100 MB more held at every epoch end, of a 16 GB device
        return [
            {
                "device": "cuda:0",
                "peak": (4 * GB + i * 100 * MB),
                "in_use": 2 * GB + i * 100 * MB,
                "total": 16 * GB,
            }
        ]

    plan = ContextRecord(t=t0, values={"memory.planned_epochs": 500})
    facts = _derive(tmp_path, plan, *_epochs(t0 + 1, [1500] * 12, devices=device))
    assert facts["memory.growing"] is True and facts["memory.growing_in"] == "device"
    assert facts["memory.growth_mb_per_epoch"] == pytest.approx(100.0)
    # 16 GB − (2 GB + 1.1 GB) held at epoch 11: 13.9 GB, 142 epochs at 100 MB
    left = (16 * GB - 2 * GB - 11 * 100 * MB) / MB / 100.0
    assert facts["memory.exhaustion_epoch"] == pytest.approx(11 + left)
    assert facts["memory.exhausted_before_end"] is True
    assert facts["memory.device.peak_bytes"] == 4 * GB + 11 * 100 * MB
    assert facts["memory.device.peak_fraction"] == pytest.approx((4 * GB + 1100 * MB) / (16 * GB))
    m180 = evaluate(RULES["M180"], facts)
    assert m180.status == "fail" and m180.severity == "warning"
    assert "device memory grows 100.0" in m180.message


def test_a_cache_after_an_endless_repeat_is_the_suspect_of_a_growth(tmp_path):
    t0 = time.time() - 100.0
    stages = [
        {"kind": "source", "op": "TensorSliceDataset"},
        {"kind": "repeat", "op": "RepeatDataset", "count": -1},
        {"kind": "cache", "op": "CacheDatasetV2", "to_file": False},
        {"kind": "batch", "op": "BatchDataset", "batch_size": 64},
    ]
    pipeline = PipelineRecord(t=t0, values={"input_kind": "tf.data", "summary": {"stages": stages}})
    facts = _derive(tmp_path, pipeline, *_epochs(t0 + 1, [900 + 16 * i for i in range(10)]))
    assert facts["memory.growing"] is True
    assert facts["memory.growth_mb_per_epoch"] == pytest.approx(16.0)
    assert facts["memory.suspect"].startswith("the input's in-memory cache() after repeat()")
    assert "a cache" not in facts["memory.left_out"]  # it never stops: not a fill left out


def test_the_peak_fraction_is_the_larger_of_host_and_device(tmp_path):
    t0 = time.time() - 100.0

    def device(_i):  # the allocator peaked at 15.5 of 16 GB
        return [
            {"device": "cuda:0", "peak": 15 * GB + 512 * MB, "in_use": 8 * GB, "total": 16 * GB}
        ]

    facts = _derive(tmp_path, *_epochs(t0, [1500] * 3, devices=device))
    assert facts["memory.host.peak_fraction"] == pytest.approx(1500 / (1500 + 20_000))
    assert facts["memory.peak_fraction"] == pytest.approx(15.5 / 16)
    m181 = evaluate(RULES["M181"], facts)
    assert m181.status == "fail" and "device 97%" in m181.message
    assert "memory.growing" not in facts  # three epochs: no verdict on growth


def test_the_input_workers_memory_is_kept_and_counts_in_the_limit(tmp_path):
    t0 = time.time() - 100.0
    records = [
        MemoryRecord(
            t=t0 + i,
            epoch=i,
            rss=1000 * MB,
            children_rss=(400 + 100 * i) * MB,  # a DataLoader's workers
            available=1000 * MB,
        )
        for i in range(3)
    ]
    facts = _derive(tmp_path, *records)
    assert facts["memory.host.children_peak_bytes"] == 600 * MB
    # the process could reach its own memory, its workers' and what was still available
    assert facts["memory.host.peak_fraction"] == pytest.approx(1000 / (1000 + 1000 + 400))
