"""Telemetry and hardware facts from hand-made run directories, checked against values by hand."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from advisor.analysis.registry import registry
from advisor.store.reader import RunReader
from advisor.store.schema import (
    ContextRecord,
    EventRecord,
    GpuSample,
    HostSample,
    Record,
    WindowRecord,
)
from advisor.store.writer import RunWriter

T0 = 1_000.0
GIB = 2**30


def make_run(tmp_path: Path, records: list[Record], **manifest: Any) -> Any:
    # the run begins just before its records (a record outside a run's life is not read)
    writer = RunWriter(tmp_path / "runs", run_id="r1", manifest={"created": T0 - 1, **manifest})
    for record in records:
        writer.write(record)
    writer.close()
    run = RunReader(writer.path).read()
    facts, errors = registry().derive(run)
    assert errors == []
    return facts


def windows() -> list[Record]:
    """A warm-up second, then two measured windows of 2 s and 1000 samples each."""
    return [
        WindowRecord(
            t=T0 + 1,
            epoch=0,
            seconds=1.0,
            steps=5,
            samples=100,
            step_begin=0,
            step_end=5,
            warmup=True,
        ),
        WindowRecord(
            t=T0 + 3, epoch=0, seconds=2.0, steps=50, samples=1000, step_begin=5, step_end=55
        ),
        WindowRecord(
            t=T0 + 5, epoch=0, seconds=2.0, steps=50, samples=1000, step_begin=55, step_end=105
        ),
    ]


def gpu_context(*names: str, replicas: int | None = None) -> ContextRecord:
    gpus = [
        {"index": i, "name": n, "uuid": f"GPU-{i}", "mem_total": 80 * GIB}
        for i, n in enumerate(names)
    ]
    return ContextRecord(
        t=T0,
        values={
            "telemetry.interval_s": 1.0,
            "telemetry.gpu_present": True,
            "telemetry.nvml": "ok",
            "telemetry.gpus": gpus,
        },
    )


UTIL = [0.0, 80.0, 90.0, 100.0, 70.0, 60.0]  # at T0 .. T0+5; the first is compile time


def counter_gpu(index: int = 0) -> list[Record]:
    return [
        GpuSample(
            t=T0 + k,
            index=index,
            util=UTIL[k],
            mem_used=(40 + k) * GIB,
            mem_total=80 * GIB,
            power_w=300.0,
            energy_j=300.0 * k,
            throttle=0x4 if k == 3 else 0x1,
        )
        for k in range(6)
    ]


def test_single_gpu_percentiles_energy_and_mfu(tmp_path: Path) -> None:
    records = [
        gpu_context("NVIDIA A100-SXM4-40GB"),
        *counter_gpu(),
        *windows(),
        ContextRecord(
            t=T0 + 6,
            values={"model.flops_per_sample": 1e9, "model.flops_method": "tf-graph-op-count"},
        ),
    ]
    facts = make_run(
        tmp_path,
        records,
        replicas=1,
        dtype_policy="mixed_bfloat16",
        framework={"backend": "tensorflow"},
    )
    # Steady samples: T0+1 .. T0+5 → 80, 90, 100, 70, 60 (the compile-time 0 is left out).
    assert facts["gpu.present"] is True
    assert facts["gpu.count"] == 1
    assert facts["gpu.util.p5"] == pytest.approx(62.0)
    assert facts["gpu.util.p50"] == pytest.approx(80.0)
    assert facts["gpu.util.p95"] == pytest.approx(98.0)
    assert facts["gpu.util.mean"] == pytest.approx(80.0)
    assert facts["gpu.util.fluctuating"] is False
    assert facts["gpu.mem.peak_fraction"] == pytest.approx(45 / 80)
    assert facts["gpu.mem.peak_source"] == "nvml"
    assert facts["gpu.power_w.mean"] == pytest.approx(300.0)
    assert facts["gpu.throttled_fraction"] == pytest.approx(
        1 / 5
    )  # the 0x1 (idle) reason does not count
    # Counter 0 → 1500 J over the run; each window of 2 s takes 600 J for 1000 samples.
    assert facts["energy.method"] == "counter"
    assert facts["energy.wh"] == pytest.approx(1500 / 3600)
    assert facts["energy.j_per_sample"] == pytest.approx(0.6)
    # 2000 samples in 4 s = 500 samples/s; 1 GFLOP each on a 312 TFLOP/s (bf16) A100.
    assert facts["throughput.samples_per_s"] == pytest.approx(500.0)
    assert facts["accelerator.model"] == "A100-SXM4-40GB"
    assert facts["accelerator.generation"] == "ampere"
    assert facts["accelerator.bf16"] is True
    assert facts["accelerator.peak_dtype"] == "bf16"
    assert facts["accelerator.peak_tflops"] == 312
    assert facts["model.flops_per_sample"] == 1e9
    assert facts["mfu"] == pytest.approx(500 * 1e9 / 312e12)


def test_two_gpus_counter_and_power_integration_and_imbalance(tmp_path: Path) -> None:
    idle = [
        GpuSample(t=T0 + k, index=1, util=5.0, mem_used=GIB, mem_total=80 * GIB, power_w=100.0)
        for k in range(6)
    ]
    records = [
        gpu_context("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        *counter_gpu(),
        *idle,
        *windows(),
    ]
    facts = make_run(tmp_path, records, replicas=2)
    assert facts["gpu.count"] == 2
    assert facts["gpu.devices"] == ["0:0", "0:1"]
    # GPU 0: 1500 J by its counter; GPU 1: 100 W × 5 s = 500 J integrated.
    assert facts["energy.method"] == "counter+power-integration"
    assert facts["energy.wh"] == pytest.approx(2000 / 3600)
    # Windows: GPU 0 600 + 600 J, GPU 1 200 + 200 J, over 2000 samples.
    assert facts["energy.j_per_sample"] == pytest.approx(1600 / 2000)
    assert facts["gpu.power_w.mean"] == pytest.approx(400.0)
    assert facts["gpu.power_w.mean_per_device"] == pytest.approx(200.0)
    assert facts["gpu.util.per_device_p50"] == [80.0, 5.0]
    # Histograms: GPU 0 in bins 6..9 (60, 70, 80, 90, 100), GPU 1 all in bin 0: disjoint.
    assert facts["gpu.load_imbalance"] == pytest.approx(math.sqrt(math.log(2)))


def test_idle_visible_gpu_is_left_out_when_the_job_has_one_replica(tmp_path: Path) -> None:
    idle = [
        GpuSample(t=T0 + k, index=1, util=0.0, mem_used=GIB, mem_total=80 * GIB, power_w=60.0)
        for k in range(6)
    ]
    facts = make_run(
        tmp_path,
        [gpu_context("NVIDIA L4", "NVIDIA L4"), *counter_gpu(), *idle, *windows()],
        replicas=1,
    )
    assert facts["gpu.count"] == 1
    assert facts["gpu.extra_visible"] == 1
    assert facts["gpu.util.p50"] == pytest.approx(80.0)
    assert "gpu.load_imbalance" not in facts
    # The idle GPU still draws power that the job pays for: it stays in the energy.
    assert facts["energy.wh"] == pytest.approx((1500 + 300) / 3600)


def test_memory_growth_and_fluctuation(tmp_path: Path) -> None:
    samples = [
        GpuSample(
            t=T0 + 0.5 * k,
            index=0,
            util=100.0 if k % 2 else 0.0,
            mem_used=int((40 if k < 20 else 48) * GIB),
            mem_total=80 * GIB,
        )
        for k in range(40)
    ]
    facts = make_run(tmp_path, [gpu_context("NVIDIA A10G"), *samples])
    # Memory: 50% for 20 samples, then 60%: the moving average (10) rises by 10 points.
    assert facts["gpu.mem.growth_points"] == pytest.approx(10.0)
    assert facts["gpu.util.fluctuating"] is True
    assert "energy.wh" not in facts  # no power, no counter: no energy figure


def test_framework_memory_peak_beats_nvml_reservation(tmp_path: Path) -> None:
    end = ContextRecord(
        t=T0 + 6,
        values={
            "telemetry.framework_mem": [{"device": "GPU:0", "peak": 8 * GIB, "total": 80 * GIB}]
        },
    )
    facts = make_run(tmp_path, [gpu_context("NVIDIA A100-SXM4-80GB"), *counter_gpu(), end])
    assert facts["gpu.mem.peak_fraction"] == pytest.approx(0.1)
    assert facts["gpu.mem.peak_source"] == "framework"
    assert facts["gpu.mem.nvml_peak_fraction"] == pytest.approx(45 / 80)


def test_host_facts_by_hand(tmp_path: Path) -> None:
    cores = [[95.0, 10.0], [50.0, 50.0], [99.0, 0.0], [20.0, 20.0]]
    iowait = [0.0, 60.0, 10.0, 70.0]
    host = [
        HostSample(
            t=T0 + 1 + k,
            cpu_percent=c,
            iowait=w,
            mem_used=k * GIB,
            mem_total=16 * GIB,
            net_rx_bps=1000.0 * k,
            disk_read_bps=10.0,
            proc_cpu_percent=100.0,
            proc_rss=GIB + k,
        )
        for k, (c, w) in enumerate(zip(cores, iowait, strict=True))
    ]
    end = ContextRecord(
        t=T0 + 6, values={"telemetry.sampler_cpu_s": 0.02, "telemetry.sampler_wall_s": 4.0}
    )
    facts = make_run(
        tmp_path,
        [
            ContextRecord(
                t=T0,
                values={
                    "telemetry.gpu_present": False,
                    "telemetry.nvml": "NVML unavailable: NVML Shared Library Not Found",
                    "telemetry.interval_s": 1.0,
                },
            ),
            *host,
            end,
        ],
    )
    assert facts["gpu.present"] is False
    assert "NVML" in facts["gpu.absent_reason"]
    assert "gpu.util.p50" not in facts and "energy.wh" not in facts and "mfu" not in facts
    assert facts["telemetry.samples"] == 4
    assert facts["host.cpu.saturated_fraction"] == pytest.approx(0.5)  # 95 and 99 are above 90
    assert facts["host.cpu.max_core_p95"] == pytest.approx(
        98.4
    )  # busiest: 20, 50, 95, 99 → pos 2.85
    assert facts["host.cpu.mean"] == pytest.approx((52.5 + 50 + 49.5 + 20) / 4)
    assert facts["host.iowait.high_fraction"] == pytest.approx(0.5)
    assert facts["host.iowait.p95"] == pytest.approx(68.5)
    assert facts["host.mem.peak_fraction"] == pytest.approx(3 / 16)
    assert facts["host.net.rx_bps.p95"] == pytest.approx(2850.0)
    assert facts["host.proc_cpu.mean"] == pytest.approx(100.0)
    # Others' share per sample: (sum of cores − this process's 100 %) ÷ 200 %: 2.5 %, 0, 0, 0.
    assert facts["host.others_cpu_fraction"] == pytest.approx(0.025 / 4)
    assert facts["host.others_cpu_p90"] == pytest.approx(0.0175)  # numpy's linear percentile
    assert facts["host.proc_rss.peak"] == GIB + 3
    assert facts["telemetry.sampler_cpu_fraction"] == pytest.approx(0.005)


def test_telemetry_off_leaves_every_fact_absent(tmp_path: Path) -> None:
    facts = make_run(tmp_path, windows())
    assert not [
        k
        for k in facts
        if k.startswith(("gpu.", "host.", "energy.", "telemetry.", "accelerator.")) or k == "mfu"
    ]


def test_lost_gpu_event_is_counted_and_samples_before_it_kept(tmp_path: Path) -> None:
    lost = EventRecord(
        t=T0 + 3.5,
        level="warning",
        source="telemetry",
        message="GPU 0 (NVIDIA T4) stopped answering NVML (GPU is lost); its samples end here",
    )
    facts = make_run(tmp_path, [gpu_context("Tesla T4"), *counter_gpu()[:4], lost])
    assert facts["gpu.lost"] == 1
    assert facts["gpu.present"] is True
    assert facts["accelerator.current_generation"] is False
    assert facts["accelerator.bf16"] is False


def test_instance_facts_from_the_manifest(tmp_path: Path) -> None:
    facts = make_run(tmp_path, windows(), instance_type="g5.12xlarge", instance_source="argument")
    assert facts["instance.type"] == "g5.12xlarge"
    assert facts["instance.family"] == "g5"
    assert facts["instance.current_generation"] is True
    assert facts["instance.accelerated_networking"] is True
    assert facts["instance.gpus"] == 4
    assert facts["instance.vcpus_per_gpu"] == 12
    assert facts["accelerator.source"] == "instance"
    assert facts["accelerator.model"] == "A10G"
    assert "mfu" not in facts  # a GPU that was not seen at run time gives no MFU
