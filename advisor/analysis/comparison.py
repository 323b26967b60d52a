"""Two runs compared against their noise: samples/s, samples/$ and every part of the fit.

Each figure's change is the shift between the two runs' observations with its 95 % interval
(``advisor.analysis.shift``). A figure is *slower* or *faster* when its interval excludes no
change, and *within noise* otherwise. The gate (``RunComparison.failed``) fails when

1. a part of the fit other than the steps (a callback hook, a checkpoint, compiling, …) got
   slower beyond noise by more than ``max_regression_pct`` percent of the baseline's time per
   step — it is named; or
2. samples/s fell beyond noise by more than ``max_regression_pct`` percent.

Contention is not a regression. When host telemetry shows the runs shared their host
differently (other processes' CPU, steal), the framework's own work — the steps, epoch
boundaries, validation — slows with the load, so its slowdown (and samples/s's) is reported as
*contention* with the figures, not failed; any other part is blamed only when even the low end
of its interval is beyond the limit (a sleep in a callback does not stretch with the load; an
overslept one a little).

Start-up and the wait for input (which the cached-input baseline measures once per run, inside
the steps) are one measurement per run: set side by side, never gated.

When samples/s is within noise but its interval still reaches a drop beyond
``max_regression_pct``, or a run has too few windows for an interval, the verdict is *not
judgeable*: the pair cannot tell, and says the smallest change it could have detected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from advisor.analysis.comparison_model import Contention, FigureChange, RunComparison
from advisor.analysis.comparison_samples import RunSamples
from advisor.analysis.shift import as_percent, log_shift, shift
from advisor.stats import median

# Other processes' share of the host's CPU that makes two runs' sharing "different": ten
# percentage points of the host, or a host more than half taken by others in either run.
CONTENTION_DIFFERENCE = 0.10
CONTENTION_BUSY = 0.50
STEAL_DIFFERENCE = 0.05
RATE_KEY = "throughput.samples_per_s"
# The framework's own compute: on a loaded host it slows with the load, like the steps.
FRAMEWORK_PARTS = frozenset({"part.train_steps", "part.epoch_boundary", "part.validation"})
STEPS_KEY = "part.train_steps"
INPUT_WAIT_KEY = "part.input_wait"


def compare_runs(
    baseline: RunSamples,
    current: RunSamples,
    max_regression_pct: float,
    baseline_facts: Mapping[str, Any] | None = None,
    current_facts: Mapping[str, Any] | None = None,
    baseline_codes: Iterable[str] = (),
    current_codes: Iterable[str] = (),
) -> RunComparison:
    """The comparison of ``current`` with ``baseline`` (see the module's docstring)."""
    rates = [_rate(baseline.rates, current.rates, RATE_KEY, "samples/s", "samples/s")]
    if baseline.price_per_hour and current.price_per_hour:
        rates.append(
            _rate(
                [r * 3600 / baseline.price_per_hour for r in baseline.rates],
                [r * 3600 / current.price_per_hour for r in current.rates],
                "cost.samples_per_dollar",
                "samples/$",
                "samples/$",
            )
        )
    step_ms = median(baseline.wall_ms_per_step)
    parts = [_part(key, baseline, current, step_ms) for key in _part_keys(baseline, current)]
    parts += [_whole(key, baseline, current) for key in baseline.whole if key in current.whole]
    wait = _input_wait(baseline, current, baseline_facts or {}, current_facts or {})
    parts += [wait] if wait is not None else []
    contention = _contention(baseline_facts or {}, current_facts or {})
    base_codes, cur_codes = set(baseline_codes), set(current_codes)
    comparison = RunComparison(
        baseline_run=baseline.run_id,
        max_regression_pct=max_regression_pct,
        rates=rates,
        parts=parts,
        contention=contention,
        appeared=sorted(cur_codes - base_codes),
        disappeared=sorted(base_codes - cur_codes),
        differences=setup_differences(baseline.setup, current.setup),
        verdict="no regression",
        summary="",
        failed=False,
    )
    _judge(comparison)
    return comparison


def setup_differences(base: Mapping[str, str], cur: Mapping[str, str]) -> list[str]:
    """'global batch size 64 → 128' for each setting both runs record and differ in."""
    return [
        f"{key} {base[key]} → {cur[key]}" for key in base if key in cur and cur[key] != base[key]
    ]


def _rate(base: list[float], cur: list[float], key: str, label: str, unit: str) -> FigureChange:
    found = log_shift(base, cur)
    figure = FigureChange(
        key=key,
        label=label,
        unit=unit,
        higher_is_better=True,
        baseline=median(base),
        current=median(cur),
        change=None,
        change_pct=None,
        baseline_n=len(base),
        current_n=len(cur),
        verdict="too few",
    )
    if found is None:
        return figure
    figure.change_pct = round(as_percent(found.estimate), 2)
    figure.low_pct, figure.high_pct = (
        round(as_percent(found.low), 2),
        round(as_percent(found.high), 2),
    )
    figure.detectable_pct = round(as_percent(found.half_width), 2)
    if figure.baseline is not None:
        figure.change = figure.baseline * (math.exp(found.estimate) - 1.0)
    figure.verdict = _verdict(found.low, found.high, higher_is_better=True)
    return figure


def _part_keys(baseline: RunSamples, current: RunSamples) -> list[str]:
    keys = [k for k in baseline.parts if k in current.parts] + [
        k for k in current.parts if k not in baseline.parts
    ]
    keys += [k for k in baseline.parts if k not in current.parts]
    return [k for k in keys if any(baseline.parts.get(k, [])) or any(current.parts.get(k, []))]


def _part(
    key: str, baseline: RunSamples, current: RunSamples, step_ms: float | None
) -> FigureChange:
    base = baseline.parts.get(key) or [0.0] * len(baseline.wall_ms_per_step)
    cur = current.parts.get(key) or [0.0] * len(current.wall_ms_per_step)
    found = shift(base, cur)
    base_ms, cur_ms = median(base), median(cur)
    figure = FigureChange(
        key=key,
        label=current.labels.get(key) or baseline.labels.get(key) or key,
        unit="ms/step",
        higher_is_better=False,
        baseline=base_ms,
        current=cur_ms,
        change=None,
        change_pct=None,
        baseline_n=len(base),
        current_n=len(cur),
        verdict="too few",
    )
    if found is None:
        return figure
    figure.change = found.estimate
    if base_ms:
        figure.change_pct = round(found.estimate / base_ms * 100.0, 2)
        figure.low_pct = round(found.low / base_ms * 100.0, 2)
        figure.high_pct = round(found.high / base_ms * 100.0, 2)
    if step_ms:
        figure.step_share_pct = round(found.estimate / step_ms * 100.0, 2)
        figure.step_share_low_pct = round(found.low / step_ms * 100.0, 2)
        figure.detectable_pct = round(found.half_width / step_ms * 100.0, 2)
    figure.verdict = _verdict(found.low, found.high, higher_is_better=False)
    return figure


def _one_measurement(key: str, label: str, unit: str, base: float, cur: float) -> FigureChange:
    """A figure measured once per run: set side by side, not gated."""
    return FigureChange(
        key=key,
        label=label,
        unit=unit,
        higher_is_better=False,
        baseline=base,
        current=cur,
        change=cur - base,
        change_pct=round((cur - base) / base * 100.0, 2) if base else None,
        baseline_n=1,
        current_n=1,
        verdict="one measurement",
    )


def _whole(key: str, baseline: RunSamples, current: RunSamples) -> FigureChange:
    base, cur = baseline.whole[key], current.whole[key]
    return _one_measurement(key, current.labels.get(key, key), "s", base, cur)


def _input_wait(
    baseline: RunSamples,
    current: RunSamples,
    base_facts: Mapping[str, Any],
    cur_facts: Mapping[str, Any],
) -> FigureChange | None:
    """The wait for input inside the steps, in ms per step, when the cached-input baseline measured
    it on both runs: one measurement per run (its share of the steps × their time), not gated."""
    base, cur = _wait_ms(baseline, base_facts), _wait_ms(current, cur_facts)
    if base is None or cur is None:
        return None
    return _one_measurement(INPUT_WAIT_KEY, "input wait (inside the steps)", "ms/step", base, cur)


def _wait_ms(run: RunSamples, facts: Mapping[str, Any]) -> float | None:
    bound, steps_ms = _num(facts.get("input.bound_fraction")), median(run.parts.get(STEPS_KEY, []))
    if bound is None or steps_ms is None:
        return None
    return bound * steps_ms if facts.get("input.bound_outside_band") else 0.0


def _verdict(low: float, high: float, higher_is_better: bool) -> Any:
    if low > 0:
        return "faster" if higher_is_better else "slower"
    if high < 0:
        return "slower" if higher_is_better else "faster"
    return "within noise"


def _contention(base: Mapping[str, Any], cur: Mapping[str, Any]) -> Contention | None:
    b_cpu, c_cpu = (
        _num(base.get("host.others_cpu_fraction")),
        _num(cur.get("host.others_cpu_fraction")),
    )
    b_steal, c_steal = _num(base.get("host.steal_fraction")), _num(cur.get("host.steal_fraction"))
    if b_cpu is None and c_cpu is None and b_steal is None and c_steal is None:
        return None
    reasons = []
    if b_cpu is not None and c_cpu is not None:
        if abs(c_cpu - b_cpu) >= CONTENTION_DIFFERENCE:
            reasons.append(
                f"other processes took {c_cpu:.0%} of the host's CPU during this run, "
                f"{b_cpu:.0%} during the baseline"
            )
        elif max(b_cpu, c_cpu) >= CONTENTION_BUSY:
            reasons.append(
                f"other processes took {max(b_cpu, c_cpu):.0%} of the host's CPU during a run "
                f"({c_cpu:.0%} this run, {b_cpu:.0%} the baseline): a shared host"
            )
    if b_steal is not None and c_steal is not None and abs(c_steal - b_steal) >= STEAL_DIFFERENCE:
        reasons.append(f"steal {c_steal:.0%} this run, {b_steal:.0%} the baseline")
    return Contention(
        baseline_others_cpu=b_cpu,
        current_others_cpu=c_cpu,
        baseline_steal=b_steal,
        current_steal=c_steal,
        differs=bool(reasons),
        note="; ".join(reasons) or None,
    )


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _judge(c: RunComparison) -> None:
    """Sets the verdict, the summary and ``failed`` (see the module's docstring)."""
    _verdict_of(c)
    for rate in c.rates:  # samples/$ follows samples/s (unless the prices differ)
        drop = -(rate.change_pct or 0.0)
        rate.regressed = c.failed and rate.verdict == "slower" and drop > c.max_regression_pct


def _verdict_of(c: RunComparison) -> None:
    limit = c.max_regression_pct
    contended = c.contention is not None and c.contention.differs
    for figure in c.parts:
        figure.regressed = _part_regressed(figure, limit, contended)
    rate = c.rates[0]
    steps = next((p for p in c.parts if p.key == STEPS_KEY), None)
    culprits = sorted(c.regressed_parts(), key=lambda p: -(p.step_share_pct or 0.0))
    if culprits:
        c.verdict, c.failed = "regression", True
        c.summary = "; ".join(describe_part(p) for p in culprits) + "; " + steps_phrase(steps)
        return
    if rate.verdict == "too few":
        c.verdict = "not judgeable"
        c.summary = (
            f"too few steady windows to compare samples/s ({rate.baseline_n} on the baseline, "
            f"{rate.current_n} on this run; at least 3 each)"
        )
        return
    loaded = [
        p
        for p in c.parts
        if p.key in FRAMEWORK_PARTS and p.verdict == "slower" and (p.step_share_pct or 0) > limit
    ]
    drop = -(rate.change_pct or 0.0)
    rate_slower = rate.verdict == "slower" and drop > limit
    if contended and (rate_slower or loaded):
        assert c.contention is not None
        c.verdict = "contention"
        moved = "; ".join(describe_part(p) for p in loaded) or "no part but the steps"
        c.summary = (
            f"samples/s {rate.change_pct:+.1f}% ({rate.verdict}); {moved}: the framework's own "
            f"work, which slows with the load; the host was shared differently: "
            f"{c.contention.note}"
        )
        return
    if rate_slower:
        c.verdict, c.failed = "regression", True
        c.summary = f"samples/s {rate.change_pct:+.1f}%, outside noise; " + steps_phrase(steps)
        return
    if rate.verdict == "within noise" and (rate.low_pct or 0.0) < -limit:
        c.verdict = "not judgeable"
        c.summary = (
            f"samples/s {rate.change_pct:+.1f}% within noise, but the interval reaches "
            f"{rate.low_pct:+.1f}%: this pair can detect changes of {rate.detectable_pct:.1f}% "
            f"or more, not {limit:g}%; longer runs or a quieter host would tell"
        )
        return
    c.verdict = "no regression"
    c.summary = f"samples/s {rate.change_pct:+.1f}% ({rate.verdict}); no part slower by {limit:g}%"


def _part_regressed(figure: FigureChange, limit: float, contended: bool) -> bool:
    """Slower beyond noise by more than ``limit`` percent of a step. On a host shared
    differently, the framework's own work is not blamed (it slows with the load) and another
    part only when even the low end of its interval is beyond the limit."""
    if figure.key == STEPS_KEY or figure.verdict != "slower":
        return False
    if (figure.step_share_pct or 0.0) <= limit:
        return False
    if not contended:
        return True
    return figure.key not in FRAMEWORK_PARTS and (figure.step_share_low_pct or 0.0) > limit


def describe_part(p: FigureChange) -> str:
    """'on_train_batch_end of MetricsLogger +4.1 ms/step (+38%), outside noise'."""
    pct = f" ({p.change_pct:+.0f}%)" if p.change_pct is not None else " (new)"
    where = p.label
    if p.key.startswith("part.callback."):
        cls, _, hook = p.label.rpartition(".")
        where = f"`{hook}` of `{cls}`"
    noise = "outside noise" if p.verdict in ("slower", "faster") else p.verdict
    return f"{where} {p.change or 0.0:+.2f} ms/step{pct}, {noise}"


def steps_phrase(steps: FigureChange | None) -> str:
    """What the training steps themselves did: 'unchanged' when within noise."""
    if steps is None or steps.verdict in ("too few", "one measurement"):
        return "the steps themselves not measured"
    if steps.verdict == "within noise":
        return "the steps themselves unchanged"
    return f"the steps themselves {steps.change or 0.0:+.2f} ms/step ({steps.verdict})"
