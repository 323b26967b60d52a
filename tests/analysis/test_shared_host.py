"""A shared host: the share of the CPU other processes took (recorded telemetry, by hand), the
finding that says so (I250), the rules that soften on it saying why, and the note beside every
measured gain in the text report. A real busy host: tests/collectors/test_model_probe_fit.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from whatif_fixtures import input_bound_run

from advisor.analysis.registry import registry
from advisor.diagnosis import evaluate, load_rules
from advisor.render import render
from advisor.service import diagnose
from advisor.store.append import append_record
from advisor.store.reader import RunReader
from advisor.store.schema import GpuSample, HostSample, WindowRecord

RULES = {r.code: r for r in load_rules()}


def _host_samples(t0: float, others_share: float) -> list[HostSample]:
    """Two saturated cores; other processes took ``others_share`` of them, the job the rest."""
    ours = 200.0 * (1.0 - others_share)
    return [
        HostSample(t=t0 + k, cpu_percent=[100.0, 100.0], proc_cpu_percent=ours) for k in range(4)
    ]


def _run_with_host(tmp_path: Path, others_share: float) -> Path:
    path = input_bound_run(tmp_path)
    windows = RunReader(path).read().of_type(WindowRecord)
    for sample in _host_samples(windows[0].t, others_share):
        append_record(path, sample)
    return path


def test_the_share_others_took_is_derived_from_the_samples(tmp_path):
    facts, _ = registry().derive(RunReader(_run_with_host(tmp_path, 0.56)).read())
    # (2 × 100% busy − 88% ours) ÷ 200% = 56% of the host, in every sample
    assert facts["host.others_cpu_fraction"] == pytest.approx(0.56)
    assert facts["host.shared_cpu_fraction"] == pytest.approx(0.56)
    quiet, _ = registry().derive(RunReader(_run_with_host(tmp_path / "q", 0.02)).read())
    assert quiet["host.others_cpu_fraction"] == pytest.approx(0.02)
    assert "host.shared_cpu_fraction" not in quiet


def test_i204_names_the_share_and_the_softened_rules_say_why():
    facts = {
        "host.others_cpu_fraction": 0.56,
        "host.others_cpu_p90": 0.6,
        "host.shared_cpu_fraction": 0.6,
        "host.proc_cpu.mean": 98.0,
        "host.cpu.mean": 99.0,
        "context.host_cpu_count": 2,
        "gpu.present": False,
    }
    i204 = evaluate(RULES["I250"], facts)
    assert i204.status == "fail" and i204.severity == "info" and not i204.impact
    assert i204.message.startswith(
        "other processes used 56% of the host's CPU while this job trained (60% or more in a "
        "tenth of the samples); the job itself used 98% of a core of 2 CPUs"
    )
    unstable = {**facts, "throughput.cv": 0.4, "throughput.stability_windows": 10}
    m103 = evaluate(RULES["M103"], unstable)
    assert m103.status == "fail" and m103.severity == "info"
    assert "the host was shared" in m103.message and "(I250)" in m103.message
    alone = {k: v for k, v in unstable.items() if k != "host.shared_cpu_fraction"}
    alone["host.others_cpu_fraction"] = alone["host.others_cpu_p90"] = 0.01
    assert "shared" not in evaluate(RULES["M103"], alone).message


def test_every_measured_gain_in_the_text_report_carries_the_shared_host(tmp_path):
    shared = render(diagnose(_run_with_host(tmp_path / "shared", 0.56)), "text")
    lines = shared.splitlines()
    after_gains = [lines[i + 1] for i, line in enumerate(lines) if "measured: " in line]
    assert after_gains, shared
    note = "measured on a shared host: other processes used up to 56% of its CPU meanwhile (I250)"
    assert all(line.strip() == f"({note})" for line in after_gains), after_gains
    assert "I250 shared-host" in shared
    heading = shared[shared.index("Measured what-if") :].split("\n\n")[0]
    assert note in " ".join(heading.split()), heading
    quiet = render(diagnose(_run_with_host(tmp_path / "quiet", 0.0)), "text")
    assert "shared host" not in quiet and "I250 shared-host" not in quiet


def test_steal_time_is_a_fact_when_the_samples_carry_it(tmp_path):
    """A VM's steal time (recorded by psutil on Linux) reaches the facts the regression gate
    reads as contention; runs without it (other systems, older runs) have no such fact."""
    path = input_bound_run(tmp_path)
    t0 = RunReader(path).read().of_type(WindowRecord)[0].t
    for k, steal in enumerate((10.0, 30.0, 20.0, 20.0)):
        append_record(path, HostSample(t=t0 + k, cpu_percent=[50.0, 50.0], steal=steal))
    facts, _ = registry().derive(RunReader(path).read())
    assert facts["host.steal_fraction"] == pytest.approx(0.20)
    plain, _ = registry().derive(RunReader(_run_with_host(tmp_path / "p", 0.02)).read())
    assert "host.steal_fraction" not in plain


def test_the_host_sampler_records_steal_where_the_kernel_counts_it():
    """The real psutil sampler on this machine: Linux counts steal (0 on bare metal)."""
    import time

    psutil = pytest.importorskip("psutil")
    from advisor.collectors.telemetry.host import HostSampler

    if not hasattr(psutil.cpu_times(), "steal"):
        pytest.skip("this kernel does not count steal time")
    sampler = HostSampler()
    assert sampler.sample(time.time(), time.monotonic()) is None  # primes the counters
    time.sleep(0.05)
    sample = sampler.sample(time.time(), time.monotonic())
    assert sample is not None and sample.steal is not None and 0.0 <= sample.steal <= 100.0


def test_another_process_on_the_jobs_gpu_is_derived_and_said(tmp_path):
    """A quiet CPU, but another process held a compute context on the job's GPU in three of four
    samples, with a tenth of its memory (samples as the NVML sampler writes them: nvml.py)."""
    path = _run_with_host(tmp_path, 0.02)
    t0 = RunReader(path).read().of_type(WindowRecord)[0].t
    for k in range(4):
        append_record(
            path,
            GpuSample(
                t=t0 + k,
                index=0,
                util=90.0,
                mem_used=40 * 2**30,
                mem_total=80 * 2**30,
                others_procs=1 if k else 0,
                others_mem=8 * 2**30 if k else 0,
            ),
        )
    facts, _ = registry().derive(RunReader(path).read())
    assert facts["gpu.others_sample_fraction"] == pytest.approx(0.75)
    assert facts["gpu.others_processes"] == 1
    assert facts["gpu.others_mem_fraction"] == pytest.approx(0.1)
    i250 = evaluate(RULES["I250"], facts)
    assert i250.status == "fail" and i250.severity == "info", i250.message
    assert "its GPU in 75% of the samples (up to 1 at once), with 10% of its memory" in i250.message
    assert facts["gpu.shared_sample_fraction"] == pytest.approx(0.75)
    text = render(diagnose(path), "text")
    note = "measured on a shared host: other processes held its GPU in 75% of the samples meanwhile"
    after_gains = [line for line in text.splitlines() if "measured on a shared host" in line]
    assert after_gains and all(note in line for line in after_gains), after_gains
