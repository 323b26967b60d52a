"""The telemetry sampler thread and collector: real psutil, real Keras training.

GPU data comes from ``nvml_fake.FakeNvml``, a FAKE of the ``pynvml`` module (no NVIDIA GPU here);
the "no GPU" runs use the real ``pynvml``, which finds no driver on this machine.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
from nvml_fake import FakeGpu, FakeNvml

from advisor.analysis.registry import registry
from advisor.collectors.telemetry.collector import TelemetryCollector, TelemetrySampler
from advisor.collectors.telemetry.host import HostSampler
from advisor.collectors.telemetry.nvml import NvmlMonitor
from advisor.errors import UsageError
from advisor.store.reader import RunReader
from advisor.store.schema import ContextRecord, EventRecord, GpuSample, HostSample, Record

pytestmark = pytest.mark.slow  # trains a model or starts a process

DEFAULTS = ["throughput", "epochs", "context"]


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "advisor-telemetry"]


def wait_for(condition, timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass (the assertions follow)."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_host_sampler_reads_real_counters() -> None:
    sampler = HostSampler()
    start = time.monotonic()
    assert sampler.sample(time.time(), start) is None  # the first call only primes
    # Burn 0.2 s of this process's CPU time (not of wall time, which a busy machine stretches).
    burn_from = time.process_time()
    while time.process_time() - burn_from < 0.2:
        sum(i * i for i in range(1000))
    end = time.monotonic()
    sample = sampler.sample(time.time(), end)
    assert isinstance(sample, HostSample)
    assert len(sample.cpu_percent) == psutil.cpu_count()
    assert all(0.0 <= c <= 100.0 for c in sample.cpu_percent)
    # The process's CPU seconds in the window, read back from its share: at least the 0.2 s
    # burnt, however long the wall time took, less the counters' resolution: psutil reads user
    # and system time in 10 ms clock ticks, and each of the two deltas can lose up to one tick.
    assert sample.proc_cpu_percent is not None
    assert sample.proc_cpu_percent / 100.0 * (end - start) >= 0.2 - 2 * 0.01 - 1e-9
    assert sample.proc_rss and sample.proc_rss > 0
    assert sample.mem_total and 0 < (sample.mem_used or 0) <= sample.mem_total
    assert sample.iowait is not None and 0.0 <= sample.iowait <= 100.0
    for rate in (sample.disk_read_bps, sample.net_rx_bps, sample.net_tx_bps):
        assert rate is None or rate >= 0.0


def test_sampler_start_stop_leaves_no_thread_and_samples_to_the_end() -> None:
    records: list[Record] = []
    gpu = NvmlMonitor(nvml=FakeNvml([FakeGpu()]), env={})
    assert gpu.open()
    sampler = TelemetrySampler(records.append, 0.1, gpu=gpu, host=HostSampler())
    sampler.start()
    time.sleep(0.35)
    # On a busy machine the thread may wake late: wait for its samples (a hang check, not timing).
    wait_for(lambda: sum(isinstance(r, GpuSample) for r in records) >= 3)
    assert sampler.running and len(sampler_threads()) == 1
    assert sampler.stop() is True
    assert sampler_threads() == [] and not sampler.running
    gpus = [r for r in records if isinstance(r, GpuSample)]
    hosts = [r for r in records if isinstance(r, HostSample)]
    assert len(gpus) >= 4  # first, ~3 on the interval, one at stop
    assert len(hosts) == len(gpus) - 1  # host samples need a previous reading
    assert sampler.cpu_seconds >= 0.0 and sampler.wall_seconds > 0.3
    sampler.stop()  # twice is harmless


class _Exploding:
    def sample(self, now: float) -> Any:
        raise RuntimeError("driver went away")

    def process_devices(self) -> None:
        return None


def test_a_failing_source_is_recorded_once_and_the_rest_goes_on() -> None:
    records: list[Record] = []
    notes: list[tuple[str, str, str]] = []
    sampler = TelemetrySampler(
        records.append, 0.1, gpu=_Exploding(), host=HostSampler(), note=lambda *n: notes.append(n)
    )
    sampler.start()
    time.sleep(0.35)
    wait_for(lambda: sum(isinstance(r, HostSample) for r in records) >= 3)
    sampler.stop()
    assert len(notes) == 1 and notes[0][0] == "warning" and "driver went away" in notes[0][2]
    assert "gpu" in sampler.failed
    assert len([r for r in records if isinstance(r, HostSample)]) >= 3
    assert sampler_threads() == []


def test_interval_below_a_tenth_of_a_second_is_a_usage_error() -> None:
    from advisor.collectors.callback import AdvisorCallback

    with pytest.raises(UsageError, match="telemetry_interval_seconds"):
        AdvisorCallback(telemetry_interval_seconds=0.05)
    with pytest.raises(UsageError, match="telemetry_devices"):
        TelemetryCollector(devices="some")


# ---------------------------------------------------------------------------------------------
# Real training


def _fit(runs_dir: Path, collectors: list[Any] | None = None, **options: Any) -> Any:
    import keras

    from advisor.collectors.callback import AdvisorCallback

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    x = np.random.rand(512, 16).astype("float32")
    y = np.random.rand(512, 1).astype("float32")
    cb = AdvisorCallback(
        runs_dir,
        collectors=collectors,
        window_seconds=0.2,
        warmup_steps=2,
        log_every_seconds=None,
        **options,
    )
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[cb])
    assert len(history.history["loss"]) == 3  # training finished whatever telemetry did
    run = RunReader(cb.run_path).read()
    facts, errors = registry().derive(run)
    assert errors == []
    return run, facts


@pytest.fixture(scope="module")
def fake_gpu_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    fake = FakeNvml(
        [
            FakeGpu(uuid="GPU-a", util=[90.0, 100.0]),
            FakeGpu(uuid="GPU-b", util=[85.0], energy_mj_per_read=None),
        ]
    )
    collector = TelemetryCollector(interval_s=0.1, nvml=fake, mfu=True)
    run, facts = _fit(tmp_path_factory.mktemp("fake-gpu"), [*DEFAULTS, collector])
    return run, facts, fake, collector


def test_training_with_fake_gpus_records_series_energy_and_mfu(fake_gpu_run: Any) -> None:
    run, facts, fake, _ = fake_gpu_run
    assert sampler_threads() == []
    samples = run.of_type(GpuSample)
    assert {s.index for s in samples} == {0, 1}
    assert run.of_type(HostSample)
    context: dict[str, Any] = {}
    for record in run.of_type(ContextRecord):
        context.update(record.values)
    assert [g["uuid"] for g in context["telemetry.gpus"]] == ["GPU-a", "GPU-b"]
    assert context["telemetry.nvml"] == "ok"
    # 16 → 32 → 1 dense, trained: 3 × forward less the first layer's input gradient (not computed).
    analytic = 2 * (2 * 16 * 32) + 3 * (2 * 32 * 1)
    assert context["model.flops_per_sample"] == pytest.approx(analytic, rel=0.05)
    assert fake.shutdowns == 1  # NVML closed at train end
    # The default strategy trains on one replica: the second GPU is left out of the statistics.
    assert (
        facts["gpu.present"] is True and facts["gpu.count"] == 1 and facts["gpu.extra_visible"] == 1
    )
    assert facts["energy.method"] == "counter+power-integration"
    assert facts["energy.wh"] > 0 and facts["energy.j_per_sample"] > 0
    assert facts["accelerator.model"] == "H100 80GB HBM3"
    assert 0 < facts["mfu"] < 1e-3
    notes = [e for e in run.of_type(EventRecord) if e.source == "telemetry"]
    assert len(notes) == 1 and "energy" in notes[0].message  # GPU-b: no counter, said once


def test_without_nvml_the_run_says_no_gpu_data_quietly(tmp_path: Path) -> None:
    run, facts = _fit(
        tmp_path, telemetry_interval_seconds=0.1
    )  # default collectors, real pynvml, no GPU
    assert facts["gpu.present"] is False and facts["gpu.absent_reason"]
    assert run.of_type(GpuSample) == [] and run.of_type(EventRecord) == []
    assert facts["telemetry.samples"] >= 1 and "host.cpu.mean" in facts
    # No MFU without an accelerator's datasheet peak (the FLOPs themselves are now counted at
    # train end by the speed-of-light collector, for the fraction of this host's measured peak).
    assert facts.get("mfu") is None
    assert sampler_threads() == []


def test_telemetry_false_switches_it_off(tmp_path: Path) -> None:
    run, facts = _fit(tmp_path, telemetry=False)
    assert run.of_type(HostSample) == [] and "gpu.present" not in facts


class _BrokenPsutil:
    """psutil whose counters fail (as in a locked-down container); Process() itself works."""

    Process = psutil.Process

    @staticmethod
    def cpu_times(percpu: bool = False) -> Any:
        raise PermissionError("no /proc/stat here")


def test_sampler_failures_never_reach_fit(tmp_path: Path) -> None:
    class Weird(FakeNvml):
        def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
            raise ZeroDivisionError("weird driver")

    collector = TelemetryCollector(
        interval_s=0.1, nvml=Weird([FakeGpu()]), psutil_module=_BrokenPsutil
    )
    run, facts = _fit(tmp_path, [*DEFAULTS, collector])
    messages = [e.message for e in run.of_type(EventRecord) if e.source == "telemetry"]
    assert len(messages) == 2, messages  # one for the GPU field, one for host sampling
    assert any("utilization" in m for m in messages) and any(
        "host sampling failed" in m for m in messages
    )
    assert run.of_type(HostSample) == []
    assert all(s.util is None for s in run.of_type(GpuSample)) and run.of_type(GpuSample)
    assert facts["gpu.present"] is True and "gpu.util.p50" not in facts
    assert sampler_threads() == []
    assert os.getpid() > 0
