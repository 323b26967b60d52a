"""Speed-of-light and precision records → facts → G552 / G553 / G501: written as the collectors
write them (a context record of the device's measured ceilings and the FLOPs; one of the precision
what-if's rounds per policy), derived through the registry, judged by the real rules."""

from __future__ import annotations

import time

from advisor.analysis.facts.speed_of_light import gap_reasons
from advisor.analysis.registry import registry
from advisor.diagnosis import evaluate, load_rules
from advisor.experiments.precision.result import PolicyResult, PrecisionResult
from advisor.store.reader import RunReader
from advisor.store.schema import ContextRecord, WindowRecord
from advisor.store.writer import RunWriter

FLOPS = 1.0e6  # per sample
RATE = 1000.0  # samples/s: 1e9 FLOP/s achieved


def _run(tmp_path, values: dict, policy: str = "float32") -> dict:
    writer = RunWriter(
        tmp_path, manifest={"global_batch_size": 100, "dtype_policy": policy}, name="sol"
    )
    for i in range(4):
        writer.write(
            WindowRecord(
                t=time.time() + i,
                epoch=0,
                seconds=1.0,
                steps=10,
                samples=int(RATE),
                step_begin=10 * i,
                step_end=10 * (i + 1),
            )
        )
    writer.write(ContextRecord(t=time.time(), values=values))
    writer.close()
    facts, errors = registry().derive(RunReader(writer.path).read())
    assert errors == []
    return facts


def _ceilings(**tflops: float) -> dict:
    values = {f"speed_of_light.tflops_{k}": v for k, v in tflops.items()}
    values.update(
        {
            "model.flops_per_sample": FLOPS,
            "model.flops_method": "tf-graph-op-count",
            "speed_of_light.device": "cpu",
            "speed_of_light.backend": "tensorflow",
            "speed_of_light.cached": False,
            "speed_of_light.bench_seconds": 0.4,
            "context.mixed_precision": False,
            "telemetry.gpu_present": False,  # a CPU host, as telemetry records it
            "telemetry.nvml": "no NVIDIA driver",
        }
    )
    return values


def _rule(code: str, facts: dict):
    rule = next(r for r in load_rules() if r.code == code)
    return evaluate(rule, facts)


def test_the_fraction_is_achieved_over_the_measured_rate_at_the_runs_dtype(tmp_path):
    values = _ceilings(float32=0.1, bfloat16=0.2, float16=0.05)
    values["speed_of_light.dtype"] = "float16"
    facts = _run(tmp_path, values, policy="mixed_float16")
    assert facts["speed_of_light.achieved_tflops"] == FLOPS * RATE / 1e12
    assert facts["speed_of_light.attainable_tflops"] == 0.05
    assert facts["speed_of_light.fraction"] == FLOPS * RATE / 1e12 / 0.05
    assert facts["speed_of_light.fraction_best"] == FLOPS * RATE / 1e12 / 0.2
    assert facts["speed_of_light.best_dtype"] == "bfloat16"
    assert "mfu" not in facts  # no GPU seen: MFU stays a datasheet figure for GPUs only


def test_the_dtype_comes_from_the_policy_when_the_record_has_none(tmp_path):
    facts = _run(tmp_path, _ceilings(float32=0.1, bfloat16=0.2), policy="mixed_bfloat16")
    assert facts["speed_of_light.dtype"] == "bfloat16"
    assert facts["speed_of_light.fraction"] == FLOPS * RATE / 1e12 / 0.2


def test_without_flops_there_is_no_fraction_and_g507_says_unknown(tmp_path):
    values = _ceilings(float32=0.1)
    del values["model.flops_per_sample"]
    facts = _run(tmp_path, values)
    assert "speed_of_light.fraction" not in facts
    assert _rule("G552", facts).status == "unknown"


def test_a_recorded_error_is_why_g552_is_unknown(tmp_path):
    """A custom loop whose count failed: the ceilings are there, the FLOPs are not, and the
    unknown finding gives the recorded error instead of a generic hint."""
    values = _ceilings(float32=0.1)
    del values["model.flops_per_sample"]
    values["speed_of_light.error"] = "FLOPs not counted: RuntimeError: shapes cannot be multiplied"
    facts = _run(tmp_path, values)
    assert facts["speed_of_light.withheld"] == values["speed_of_light.error"]
    finding = _rule("G552", facts)
    assert finding.status == "unknown" and "shapes cannot be multiplied" in finding.message
    assert "speed_of_light.withheld" not in _run(tmp_path / "ok", _ceilings(float32=0.1))


def test_g507_fails_far_below_and_passes_near_the_speed_of_light(tmp_path):
    far = _run(tmp_path / "far", _ceilings(float32=10.0))  # 1e-4 of it
    assert _rule("G552", far).status == "fail"
    assert "0.01%" in _rule("G552", far).message
    near = _run(tmp_path / "near", _ceilings(float32=0.002))  # half of it
    assert _rule("G552", near).status == "pass"


def _precision(own: str, rates: dict[str, list[float]], skipped: dict[str, str] = {}) -> dict:
    result = PrecisionResult(own=own, backend="tensorflow", jit=False, device="cpu")
    for policy, rounds in rates.items():
        result.policies[policy] = PolicyResult(policy, "measured", rounds=rounds)
    for policy, why in skipped.items():
        result.policies[policy] = PolicyResult(policy, "skipped", why)
    return result.values()


def test_g508_fails_when_float32_beats_the_runs_mixed_policy_beyond_its_band(tmp_path):
    own = [100.0, 104.0, 98.0, 101.0, 99.0, 102.0]
    values = _ceilings(float32=0.1, float16=0.05)
    values.update(
        _precision(
            "mixed_float16",
            {
                "mixed_float16": own,
                "float32": [r * 3 for r in own],
                "mixed_bfloat16": [r * 4 for r in own],
            },
        )
    )
    values["context.mixed_precision"] = True
    facts = _run(tmp_path, values, policy="mixed_float16")
    assert facts["precision.own_slowdown"] == 3.0
    assert facts["precision.best"] == "mixed_bfloat16"
    assert facts["precision.loss_scale_overhead"] == 0.75
    finding = _rule("G553", facts)
    assert finding.status == "fail" and finding.severity == "error"
    assert "3.00×" in finding.message
    # the dtype is the measured reason that explains most of the gap, in seconds
    budget = {"time.wall_seconds": 30.0, "time.train_steps.seconds": 24.0}
    budget |= {"time.startup.seconds": 4.0, "time.callbacks.seconds": 1.0}
    reasons = gap_reasons(facts | budget, facts["speed_of_light.fraction"])
    assert [r["reason"] for r in reasons["speed_of_light.reasons"]] == [
        "dtype",
        "compile",
        "callbacks",
    ]
    # the fastest policy (mixed_bfloat16, 4×) saves 3/4 of the compute time
    assert reasons["speed_of_light.reasons"][0]["seconds"] == 24.0 * 0.75


def test_compile_seconds_are_read_when_the_run_has_them():
    facts = {"time.wall_seconds": 10.0, "time.train_steps.seconds": 6.0}
    facts |= {"time.startup.seconds": 3.0, "compile.seconds": 2.5}
    out = gap_reasons(facts, 0.5)
    assert out["speed_of_light.gap_seconds"] == 7.0
    assert out["speed_of_light.reasons"][0] == {
        "reason": "compile",
        "seconds": 2.5,
        "share": 2.5 / 7,
    }
    assert out["speed_of_light.unexplained_seconds"] == 4.5


def test_g508_passes_within_noise_and_g501_fails_on_a_cpu_where_bfloat16_gains(tmp_path):
    own = [100.0, 130.0, 80.0, 120.0, 90.0, 110.0]
    values = _ceilings(float32=0.1, bfloat16=0.2)
    values.update(
        _precision(
            "float32",
            {"float32": own, "mixed_bfloat16": [r * 1.6 for r in own]},
            skipped={"mixed_float16": "the allowance ran out before it"},
        )
    )
    facts = _run(tmp_path, values, policy="float32")
    assert "precision.own_slowdown" not in facts  # a float32 run has nothing to be slower than
    assert facts["precision.mixed_best"] == "mixed_bfloat16"
    assert "mixed_float16: the allowance ran out" in facts["precision.not_measured"]
    assert _rule("G553", facts).status == "n/a"  # a float32 run has no mixed policy to judge
    g501 = _rule("G501", facts)
    assert g501.status == "fail" and "mixed_bfloat16 trains 1.60×" in g501.message


def test_g501_does_not_apply_on_a_cpu_without_a_measured_gain(tmp_path):
    own = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    values = _ceilings(float32=0.1)
    values.update(_precision("float32", {"float32": own, "mixed_bfloat16": own}))
    facts = _run(tmp_path, values, policy="float32")
    assert _rule("G501", facts).status == "n/a"
