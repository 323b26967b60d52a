"""The fraction of speed of light, and the measured reasons for the gap (docs/speed-of-light.md).

The speed of light is what this device sustains at the run's compute dtype, measured on the
host at train end (the ``speed_of_light`` collector). The fraction is the model FLOP/s the fit
achieved (FLOPs per sample × samples/s, per device) ÷ that figure. MFU (the ``hardware`` area)
divides the same FLOP/s by a datasheet peak instead, and only for a GPU seen at run time.

The gap is the fit's wall clock (the advisor's own time left out) less the time its samples would
take at the speed of light. Its reasons are what the advisor measured, each in seconds: input
wait, callbacks, compile (``compile.seconds`` when the goodput collector has it, else start-up to
the first step), validation, checkpoints, epoch-start stalls, dispatch overhead (the what-if's
measured ``steps_per_execution`` gain) and dtype (the precision what-if's measured gain); what
none of them covers is ``speed_of_light.unexplained_seconds``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

DTYPES = ("float32", "bfloat16", "float16")
AREA = "speed_of_light"
FACTS = (
    Fact(
        "speed_of_light.fraction",
        "fraction",
        "achieved model FLOP/s ÷ what this device sustains at the run's compute dtype (measured)",
        AREA,
    ),
    Fact(
        "speed_of_light.percent",
        "%",
        "the fraction as a percentage (messages show it to two significant digits)",
        AREA,
    ),
    Fact(
        "speed_of_light.fraction_best",
        "fraction",
        "achieved model FLOP/s ÷ the fastest dtype this device sustains (measured)",
        AREA,
    ),
    Fact("speed_of_light.dtype", "", "the run's compute dtype (from its policy)", AREA, "str"),
    Fact(
        "speed_of_light.attainable_tflops",
        "TFLOP/s",
        "dense matmul FLOP/s this device sustains at the run's compute dtype (measured)",
        AREA,
    ),
    Fact(
        "speed_of_light.achieved_tflops",
        "TFLOP/s",
        "model FLOP/s the fit achieved per device",
        AREA,
    ),
    Fact("speed_of_light.best_dtype", "", "the dtype this device computes fastest", AREA, "str"),
    Fact("speed_of_light.tflops_float32", "TFLOP/s", "measured float32 matmul FLOP/s", AREA),
    Fact("speed_of_light.tflops_bfloat16", "TFLOP/s", "measured bfloat16 matmul FLOP/s", AREA),
    Fact("speed_of_light.tflops_float16", "TFLOP/s", "measured float16 matmul FLOP/s", AREA),
    Fact("speed_of_light.bandwidth_gbs", "GB/s", "measured memory bandwidth (copy)", AREA),
    Fact("speed_of_light.device", "", "the device measured: cpu or gpu", AREA, "str"),
    Fact("speed_of_light.backend", "", "the backend whose ops measured it", AREA, "str"),
    Fact(
        "speed_of_light.cached",
        "",
        "the figure came from the store's cache (measured by an earlier fit on this host)",
        AREA,
        "bool",
    ),
    Fact("speed_of_light.bench_seconds", "s", "what the microbenchmark took to measure", AREA),
    Fact(
        "speed_of_light.error",
        "",
        "why the microbenchmark or a custom loop's FLOP count failed",
        AREA,
        "str",
    ),
    Fact(
        "speed_of_light.withheld",
        "",
        "why the run has no fraction although the speed of light was measured (its error)",
        AREA,
        "str",
    ),
    Fact(
        "speed_of_light.gap_seconds",
        "s",
        "the fit's wall clock (the advisor's own time left out) less its time at speed of light",
        AREA,
    ),
    Fact(
        "speed_of_light.reasons",
        "",
        "the measured reasons for the gap, largest first: reason, seconds, share of the gap",
        AREA,
        "list",
    ),
    Fact(
        "speed_of_light.reasons_text",
        "",
        "the measured reasons in words, largest first",
        AREA,
        "str",
    ),
    Fact("speed_of_light.top_reason", "", "the largest measured reason", AREA, "str"),
    Fact(
        "speed_of_light.unexplained_seconds",
        "s",
        "seconds of the gap no measured reason explains",
        AREA,
    ),
    Fact(
        "speed_of_light.unexplained_share",
        "fraction",
        "share of the gap no measured reason explains",
        AREA,
    ),
)
_RECORDED = {
    "speed_of_light.dtype",
    "speed_of_light.bandwidth_gbs",
    "speed_of_light.device",
    "speed_of_light.backend",
    "speed_of_light.cached",
    "speed_of_light.bench_seconds",
    "speed_of_light.error",
} | {f"speed_of_light.tflops_{d}" for d in DTYPES}


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import ContextRecord

    out: dict[str, Any] = {}
    for record in run.chief_of_type(ContextRecord):
        for key, value in record.values.items():
            if key in _RECORDED and value is not None:
                out[key] = value
    if out.get("speed_of_light.dtype") is None:
        policy = str(facts.get("context.dtype_policy") or "")
        dtype = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}.get(policy, policy)
        if dtype in DTYPES:
            out["speed_of_light.dtype"] = dtype
    measured = {
        d: float(out[f"speed_of_light.tflops_{d}"])
        for d in DTYPES
        if isinstance(out.get(f"speed_of_light.tflops_{d}"), (int, float))
        and out[f"speed_of_light.tflops_{d}"] > 0
    }
    if measured:
        out["speed_of_light.best_dtype"] = max(measured, key=lambda d: measured[d])
    achieved = _achieved_tflops(facts)
    run_dtype = out.get("speed_of_light.dtype")
    attainable = measured.get(run_dtype) if isinstance(run_dtype, str) else None
    if achieved is None or attainable is None:
        if out.get("speed_of_light.error"):
            out["speed_of_light.withheld"] = str(out["speed_of_light.error"])
        return out
    out["speed_of_light.achieved_tflops"] = achieved
    out["speed_of_light.attainable_tflops"] = attainable
    out["speed_of_light.fraction"] = achieved / attainable
    out["speed_of_light.percent"] = 100.0 * achieved / attainable
    out["speed_of_light.fraction_best"] = achieved / max(measured.values())
    out.update(gap_reasons(facts, out["speed_of_light.fraction"]))
    return out


def _achieved_tflops(facts: dict[str, Any]) -> float | None:
    flops = facts.get("model.flops_per_sample")
    rate = facts.get("throughput.samples_per_s")
    if not isinstance(flops, (int, float)) or not isinstance(rate, (int, float)):
        return None
    if flops <= 0 or rate <= 0:
        return None
    replicas = facts.get("context.replicas")
    devices = int(replicas) if isinstance(replicas, int) and replicas > 0 else 1
    return flops * rate / devices / 1e12


def _seconds(facts: dict[str, Any], name: str) -> float:
    value = facts.get(name)
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


def _measured(facts: dict[str, Any], speedup: str, outside: str) -> float:
    """A measured speedup (×) when its gain is outside its noise band, else 0."""
    value = facts.get(speedup)
    return float(value) if facts.get(outside) is True and isinstance(value, (int, float)) else 0.0


def _gain_seconds(compute: float, speedup: float) -> float:
    """Seconds of ``compute`` a measured ``speedup`` (×) would save."""
    if speedup <= 1.0 or compute <= 0:
        return 0.0
    return compute * (1.0 - 1.0 / speedup)


def gap_reasons(facts: dict[str, Any], fraction: float) -> dict[str, Any]:
    """The gap between the fit and its speed of light in seconds, and the measured reasons for
    it, largest first (nothing without the goodput time budget)."""
    wall = _seconds(facts, "time.wall_seconds")
    steps = _seconds(facts, "time.train_steps.seconds")
    if wall <= 0 or steps <= 0:
        return {}
    own = sum(
        _seconds(facts, f"time.{name}.seconds")
        for name in ("advisor_hooks", "advisor_measure", "profile")
    )
    input_wait = _seconds(facts, "time.input_wait.seconds")
    compute = max(0.0, steps - input_wait)
    gap = max(0.0, wall - own - steps * min(1.0, fraction))
    compile_s = _seconds(facts, "compile.seconds") or _seconds(facts, "time.startup.seconds")
    spe_gain = max(
        _measured(
            facts,
            f"whatif.steps_per_execution_{n}.speedup",
            f"whatif.steps_per_execution_{n}.outside_band",
        )
        for n in (8, 32)
    )
    dtype_gain = max(
        _measured(facts, "precision.best_speedup", "precision.outside_band"),
        _measured(facts, "precision.own_slowdown", "precision.own_slowdown_outside_band"),
    )
    reasons = {
        "input wait": input_wait,
        "callbacks": _seconds(facts, "time.callbacks.seconds"),
        "compile": compile_s,
        "validation": _seconds(facts, "time.validation.seconds"),
        "checkpoints": _seconds(facts, "time.checkpoint.seconds"),
        "epoch-start stalls": _seconds(facts, "time.epoch_boundary.seconds"),
        "dispatch overhead": _gain_seconds(compute, spe_gain),
        "dtype": _gain_seconds(compute, dtype_gain),
    }
    ordered = sorted(((v, k) for k, v in reasons.items() if v >= 0.01), reverse=True)
    ranked: list[dict[str, Any]] = [
        {"reason": k, "seconds": v, "share": v / gap if gap > 0 else None} for v, k in ordered
    ]
    explained = sum(v for v, _ in ordered)
    unexplained = max(0.0, gap - explained)
    out: dict[str, Any] = {
        "speed_of_light.gap_seconds": gap,
        "speed_of_light.reasons": ranked,
        "speed_of_light.unexplained_seconds": unexplained,
    }
    if gap > 0:
        out["speed_of_light.unexplained_share"] = unexplained / gap
    if ranked:
        out["speed_of_light.top_reason"] = ranked[0]["reason"]
        out["speed_of_light.reasons_text"] = ", ".join(f"{k} {v:.1f} s" for v, k in ordered)
    return out
