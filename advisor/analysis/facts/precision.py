"""The precision what-if's figures: the model's samples/s at each dtype policy on the run's own
backend and device, each measured in a fresh process, compute only; each policy's speedup over
the run's own policy is the median of paired round ratios, with its noise band
(``advisor.noise``). docs/speed-of-light.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor import noise
from advisor.analysis.registry import DeriveContext, Fact
from advisor.stats import median

if TYPE_CHECKING:
    from advisor.store.reader import Run

AREA = "precision"
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
FACTS = (
    Fact(
        "precision.own", "", "the run's own dtype policy, as the what-if measured it", AREA, "str"
    ),
    Fact("precision.why", "", "why the precision what-if ran", AREA, "str"),
    Fact("precision.seconds", "s", "wall time of the precision what-if", AREA),
    Fact(
        "precision.best",
        "",
        "the dtype policy that trained fastest (the own when none beat it)",
        AREA,
        "str",
    ),
    Fact("precision.best_speedup", "×", "the fastest policy's samples/s ÷ the own policy's", AREA),
    Fact("precision.best_band", "fraction", "the noise band of that speedup", AREA),
    Fact(
        "precision.outside_band",
        "",
        "the fastest policy's gain is outside its noise band",
        AREA,
        "bool",
    ),
    Fact(
        "precision.own_slowdown",
        "×",
        "float32's samples/s ÷ the own mixed policy's (above 1: the policy slows this device)",
        AREA,
    ),
    Fact("precision.own_slowdown_band", "fraction", "the noise band of that slowdown", AREA),
    Fact(
        "precision.own_slowdown_outside_band",
        "",
        "float32's gain over the own mixed policy is outside its noise band",
        AREA,
        "bool",
    ),
    Fact(
        "precision.mixed_speedup",
        "×",
        "the faster mixed policy's samples/s ÷ float32's, for a float32 run",
        AREA,
    ),
    Fact("precision.mixed_best", "", "the faster mixed policy, for a float32 run", AREA, "str"),
    Fact(
        "precision.mixed_outside_band",
        "",
        "that mixed policy's gain is outside its noise band",
        AREA,
        "bool",
    ),
    Fact(
        "precision.loss_scale_overhead",
        "fraction",
        "1 − mixed_float16's samples/s ÷ mixed_bfloat16's: the loss scaling and float16 kernels",
        AREA,
    ),
    Fact(
        "precision.not_measured",
        "",
        "the policies not measured, each with why (what the device cannot run)",
        AREA,
        "str",
    ),
    Fact("precision.table", "", "every policy: samples/s, speedup, band, status", AREA, "list"),
)


def _policies(run: Run) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from advisor.store.schema import ContextRecord

    values: dict[str, Any] = {}
    for record in run.chief_of_type(ContextRecord):
        if "precision.policies" in record.values:
            values = record.values
    rows = values.get("precision.policies")
    return values, [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _speedup(rounds: list[float], own: list[float]) -> tuple[float | None, float | None, bool]:
    """(median paired ratio, its band's half-width ÷ it, the gain is outside the band)."""
    ratios = noise.paired(rounds, own, noise.ratio)
    if not ratios:
        return None, None, False
    band = noise.band(ratios)
    if band is None or band.value <= 0:
        return median(ratios), None, False
    gain = noise.band([r - 1.0 for r in ratios])
    return band.value, band.half_width / band.value, bool(gain is not None and gain.above_zero)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    values, rows = _policies(run)
    if not rows:
        return {}
    own = str(values.get("precision.own") or "float32")
    out: dict[str, Any] = {"precision.own": own}
    for key in ("precision.why", "precision.seconds"):
        if values.get(key) is not None:
            out[key] = values[key]
    rounds = {str(r["policy"]): [float(v) for v in r.get("rounds") or []] for r in rows}
    own_rounds = rounds.get(own) or []
    table, missing = [], []
    speed: dict[str, tuple[float | None, float | None, bool]] = {}
    for row in rows:
        policy = str(row["policy"])
        entry = {"policy": policy, "status": row.get("status"), "reason": row.get("reason")}
        if rounds[policy] and own_rounds:
            speed[policy] = _speedup(rounds[policy], own_rounds)
            entry["samples_per_s"] = median(rounds[policy])
            entry["speedup"], entry["band"], entry["outside_band"] = speed[policy]
        else:
            missing.append(f"{policy}: {row.get('reason') or row.get('status')}")
        table.append(entry)
    out["precision.table"] = table
    if missing:
        out["precision.not_measured"] = "; ".join(missing)
    measured = {p: s for p, s in speed.items() if s[0] is not None}
    if len(measured) < 2:
        return out
    best = max(measured, key=lambda p: measured[p][0] or 0.0)
    out["precision.best"] = best
    out["precision.best_speedup"], band, out["precision.outside_band"] = measured[best]
    if band is not None:
        out["precision.best_band"] = band
    if own != "float32" and "float32" in measured:
        slowdown, slowdown_band, slowdown_outside = measured["float32"]
        out["precision.own_slowdown"] = slowdown
        out["precision.own_slowdown_outside_band"] = slowdown_outside
        if slowdown_band is not None:
            out["precision.own_slowdown_band"] = slowdown_band
    if own == "float32":
        mixed = [p for p in ("mixed_bfloat16", "mixed_float16") if p in measured]
        if mixed:
            top = max(mixed, key=lambda p: measured[p][0] or 0.0)
            out["precision.mixed_best"] = top
            out["precision.mixed_speedup"] = measured[top][0]
            out["precision.mixed_outside_band"] = measured[top][2]
    f16, bf16 = measured.get("mixed_float16"), measured.get("mixed_bfloat16")
    if f16 and bf16 and f16[0] and bf16[0]:
        out["precision.loss_scale_overhead"] = 1.0 - f16[0] / bf16[0]
    return out
