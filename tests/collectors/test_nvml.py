"""The NVML wrapper, driven through a FAKE ``pynvml`` module (this machine has no NVIDIA GPU).

``nvml_fake.FakeNvml`` stands in for the ``pynvml`` module at the library boundary and raises the
real ``pynvml.NVMLError`` types. The "no NVML" case uses the real ``pynvml`` on this machine.
"""

from __future__ import annotations

import pynvml
import pytest
from nvml_fake import FakeGpu, FakeNvml

from advisor.collectors.telemetry.nvml import NvmlMonitor, visible_devices, worker_device_indices


def test_normal_series_with_units_converted() -> None:
    fake = FakeNvml([FakeGpu(util=[10.0, 20.0, 30.0])])
    mon = NvmlMonitor(nvml=fake, env={})
    assert mon.open() is True
    assert mon.info() == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": fake.gpus[0].uuid,
            "mem_total": 80 * 2**30,
        }
    ]
    series = []
    for k in range(3):
        samples, notes = mon.sample(100.0 + 0.5 * k)
        assert notes == []
        series.extend(samples)
    assert [s.util for s in series] == [10.0, 20.0, 30.0]
    first = series[0]
    assert first.t == 100.0 and first.index == 0
    assert first.power_w == 300.0  # 300 000 mW
    assert first.energy_j == pytest.approx(1300.0)  # (1 000 000 + 300 000) mJ
    assert series[2].energy_j - series[0].energy_j == pytest.approx(600.0)
    assert first.mem_used == 40 * 2**30 and first.mem_total == 80 * 2**30
    assert first.temp_c == 60 and first.sm_clock_mhz == 1755
    assert first.pcie_tx_bps == 1000 * 1024 and first.pcie_rx_bps == 2000 * 1024  # KB/s → B/s
    assert (
        series[1].pcie_tx_bps is None
    )  # PCIe is read at most once a second (each read blocks ~20 ms)
    assert series[2].pcie_tx_bps == 1000 * 1024
    mon.close()
    assert fake.shutdowns == 1


def test_energy_counter_not_supported_is_noted_once_and_power_remains() -> None:
    fake = FakeNvml([FakeGpu(energy_mj_per_read=None)])
    mon = NvmlMonitor(nvml=fake, env={})
    assert mon.open()
    samples, notes = mon.sample(1.0)
    assert samples[0].energy_j is None and samples[0].power_w == 300.0
    assert len(notes) == 1 and notes[0][0] == "info" and "power × time" in notes[0][1]
    samples, notes = mon.sample(2.0)
    assert notes == [] and samples[0].power_w == 300.0


def test_unsupported_fields_are_dropped_one_by_one() -> None:
    gpu = FakeGpu(
        unsupported={
            "nvmlDeviceGetTemperature",
            "nvmlDeviceGetPcieThroughput",
            "nvmlDeviceGetClockInfo",
        }
    )
    mon = NvmlMonitor(nvml=FakeNvml([gpu]), env={})
    assert mon.open()
    samples, notes = mon.sample(1.0)
    assert len(notes) == 3
    assert (
        samples[0].temp_c is None
        and samples[0].sm_clock_mhz is None
        and samples[0].pcie_rx_bps is None
    )
    assert samples[0].util == 50.0 and samples[0].energy_j is not None
    assert mon.sample(2.0)[1] == []


def test_gpu_lost_mid_run_stops_that_gpu_only() -> None:
    fake = FakeNvml([FakeGpu(uuid="GPU-a", lost_after_reads=2), FakeGpu(uuid="GPU-b", util=[70.0])])
    mon = NvmlMonitor(nvml=fake, env={})
    assert mon.open()
    counts, notes_seen = [], []
    for k in range(5):
        samples, notes = mon.sample(float(k))
        counts.append(sorted(s.index for s in samples))
        notes_seen.extend(notes)
    assert counts == [[0, 1], [0, 1], [1], [1], [1]]
    assert len(notes_seen) == 1
    level, message = notes_seen[0]
    assert level == "warning" and "GPU 0" in message and "stopped answering" in message


def test_several_devices_and_cuda_visible_devices() -> None:
    gpus = [FakeGpu(uuid=f"GPU-{i}aaaa", name=f"NVIDIA L4 #{i}") for i in range(4)]
    mon = NvmlMonitor(nvml=FakeNvml(gpus), env={"CUDA_VISIBLE_DEVICES": "2,GPU-3"})
    assert mon.open()
    assert [d.index for d in mon.devices] == [2, 3]
    samples, _ = mon.sample(1.0)
    assert [s.index for s in samples] == [2, 3]


def test_no_nvml_is_no_gpu_data_without_raising() -> None:
    fake = FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    mon = NvmlMonitor(nvml=fake, env={})
    assert mon.open() is False and "NVML" in (mon.reason or "")
    real = NvmlMonitor(env={})  # the real pynvml: this machine has no NVIDIA driver
    assert real.open() is False and real.reason
    hidden = NvmlMonitor(nvml=FakeNvml([FakeGpu()]), env={"CUDA_VISIBLE_DEVICES": ""})
    assert hidden.open() is False and "hides" in (hidden.reason or "")


def test_which_device_each_worker_uses() -> None:
    assert visible_devices(4, [None] * 4, {}) == ([0, 1, 2, 3], None)
    assert visible_devices(4, [None] * 4, {"CUDA_VISIBLE_DEVICES": "1,7,2"}) == (
        [1],
        None,
    )  # CUDA stops at 7
    assert visible_devices(2, [None] * 2, {"CUDA_VISIBLE_DEVICES": "MIG-xyz"})[1] is not None
    # One process per GPU, all visible: the local rank picks the GPU.
    assert worker_device_indices([0, 1, 2, 3], 4, {"LOCAL_RANK": "2"}) == [2]
    assert worker_device_indices(
        [0, 1, 2, 3], 8, {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    ) == [1]
    # One process using every GPU (MirroredStrategy), or one GPU visible per process.
    assert worker_device_indices([0, 1, 2, 3], 1, {}) == [0, 1, 2, 3]
    assert worker_device_indices([3], 4, {"LOCAL_RANK": "3"}) == [3]


def test_process_devices_from_running_processes() -> None:
    fake = FakeNvml([FakeGpu(uuid="GPU-a", pids=[]), FakeGpu(uuid="GPU-b", pids=[4242])])
    mon = NvmlMonitor(nvml=fake, env={}, devices="all")
    assert mon.open()
    assert mon.process_devices(4242) == [1]
    assert mon.process_devices(1) is None


def test_other_processes_on_the_gpu_are_counted_where_nvml_lists_this_process() -> None:
    import os

    own, other, third = os.getpid(), 4_000_001, 4_000_002
    shared = FakeGpu(pids=[own, other], pid_mem={other: 8 * 2**30})
    alone = FakeGpu(uuid="GPU-alone", pids=[own])
    # a container whose PIDs NVML gives as the host's: this process is not in the list, so the
    # others cannot be told from it
    foreign = FakeGpu(uuid="GPU-foreign", pids=[other, third])
    # NVML could not tell one process's memory (NVML_VALUE_NOT_AVAILABLE)
    unknown = FakeGpu(uuid="GPU-unknown", pids=[own, other], pid_mem={other: 2**64 - 1})
    mon = NvmlMonitor(nvml=FakeNvml([shared, alone, foreign, unknown]), env={})
    assert mon.open() is True
    samples, notes = mon.sample(100.0)
    assert notes == []
    got = {s.index: (s.others_procs, s.others_mem) for s in samples}
    assert got == {0: (1, 8 * 2**30), 1: (0, 0), 2: (None, None), 3: (1, None)}
    mon.close()
