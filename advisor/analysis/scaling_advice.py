"""What a scaling table recommends: the best configuration per goal, and a labelled projection.

Pure functions of the table's rows. For each goal the advisor can measure — samples/s, samples
per dollar, energy per sample — the best strategy × worker count, with the runner-up and the
smallest size for comparison in its reason. Then a *projection* of the next worker count (twice
the largest measured) for the fastest strategy, from its measured split of the step into
computation, exposed communication and the rest; it is labelled as a projection and lists the
assumptions it rests on. The sweep's D6 findings are attached by the service (it diagnoses the
sweep's runs); this module only reads rows.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.analysis.scaling import Recommendation, Row, ScalingTable


def recommend(table: ScalingTable) -> list[Recommendation]:
    """The recommendations of ``table``, in a fixed order: samples/s, samples/$, energy,
    projection."""
    out: list[Recommendation] = []
    for goal, unit, value, better in (
        ("samples_per_s", "samples/s", lambda r: r.samples_per_s, max),
        ("samples_per_dollar", "samples/$", lambda r: r.samples_per_dollar, max),
        ("energy", "J/sample", lambda r: r.energy_j_per_sample, min),
    ):
        found = _best(table.rows, goal, unit, value, better)
        if found is not None:
            out.append(found)
    fastest = next((r for r in out if r.goal == "samples_per_s"), None)
    if fastest is not None:
        projection = project(table, fastest.strategy)
        if projection is not None:
            out.append(projection)
    return out


def _best(
    rows: list[Row],
    goal: str,
    unit: str,
    value: Callable[[Row], float | None],
    better: Callable[..., Row],
) -> Recommendation | None:
    measured = [r for r in rows if value(r) is not None]
    if not measured:
        return None
    best = better(measured, key=lambda r: value(r) or 0.0)
    best_value = value(best)
    assert best_value is not None
    others = [r for r in measured if r is not best]
    parts = [f"{_fmt(best_value)} {unit}"]
    if others:
        second = better(others, key=lambda r: value(r) or 0.0)
        second_value = value(second)
        assert second_value is not None
        parts.append(f"next best {second.strategy} ×{second.workers} at {_fmt(second_value)}")
    smallest = min((r for r in measured if r.strategy == best.strategy), key=lambda r: r.workers)
    if (
        goal == "samples_per_s"
        and best.speedup is not None
        and best.efficiency is not None
        and best.workers > smallest.workers
    ):
        # The scaling table's measure (epoch time, first epoch out) for both figures: the samples/s
        # ratio counts the first epoch's compilation too and reads lower.
        parts.append(
            f"epoch-time speedup {best.speedup:.2f}× over {best.strategy} ×{smallest.workers}, "
            f"scaling efficiency {best.efficiency:.0%}"
        )
    elif smallest is not best:
        smallest_value = value(smallest)
        assert smallest_value is not None and smallest_value > 0
        parts.append(
            f"{best_value / smallest_value:.2f}× the {unit} of {best.strategy} ×{smallest.workers}"
        )
    if goal == "samples_per_s" and best is smallest:
        larger = [
            r
            for r in rows
            if r.speedup is not None
            and r.workers > min(o.workers for o in rows if o.strategy == r.strategy)
        ]
        if larger:
            top = max(larger, key=lambda r: r.speedup or 0.0)
            assert top.speedup is not None
            efficiency = (
                "" if top.efficiency is None else f", scaling efficiency {top.efficiency:.0%}"
            )
            lead = (
                "the best speedup from more workers"
                if top.speedup > 1.0
                else "no larger size beat its own smallest; the closest"
            )
            parts.append(
                f"{lead}: {top.strategy} ×{top.workers}, epoch-time speedup {top.speedup:.2f}× "
                f"over its smallest size{efficiency}"
            )
    return Recommendation(
        goal=goal,
        strategy=best.strategy,
        workers=best.workers,
        value=best_value,
        unit=unit,
        reason="; ".join(parts),
    )


def _split(table: ScalingTable, strategy: str) -> tuple[list[Row], Row | None]:
    """The rows of ``strategy`` with a step time and batch, and the largest of them whose step
    was split into computation and exposed communication (None when none was)."""
    mine = [r for r in table.rows if r.strategy == strategy and r.step_ms and r.per_replica_batch]
    split = [
        r
        for r in mine
        if r.compute_percent is not None and r.exposed_communication_percent is not None
    ]
    return mine, max(split, key=lambda r: r.workers) if split else None


def advice_notes(table: ScalingTable, recommendations: list[Recommendation]) -> list[str]:
    """What the recommendations could not give, one line each, for the table's notes: a projection
    refused because the trace found no computation at the size it would start from."""
    fastest = next((r for r in recommendations if r.goal == "samples_per_s"), None)
    if fastest is None or any(r.goal == "projection" for r in recommendations):
        return []
    _, last = _split(table, fastest.strategy)
    if last is None or last.compute_percent:
        return []
    empty = [
        f"×{r.workers}"
        for r in table.rows
        if r.strategy == fastest.strategy and r.compute_percent == 0
    ]
    return [
        f"no projection for {fastest.strategy}: the trace found no computation at "
        f"{' and '.join(empty)} (0 ms of the step), so its step cannot be split to project a "
        "larger size"
    ]


def project(table: ScalingTable, strategy: str) -> Recommendation | None:
    """samples/s at twice the largest measured worker count of ``strategy``, from that size's
    computation / exposed communication / other split; None without a split or a step time, or
    when the split found no computation (a trace without compute ops: ``advice_notes`` says so)."""
    mine, last = _split(table, strategy)
    if last is None or not last.compute_percent:
        return None
    assert last.step_ms is not None and last.per_replica_batch is not None
    n, n_next = last.workers, 2 * last.workers
    compute_ms = last.step_ms * (last.compute_percent or 0.0) / 100.0
    comm_ms = last.step_ms * (last.exposed_communication_percent or 0.0) / 100.0
    other_ms = max(0.0, last.step_ms - compute_ms - comm_ms)
    # A bandwidth-bound ring all-reduce sends 2(N−1)/N of the gradients per replica; from one
    # replica there is nothing to send, so the first measured size with communication sets the
    # scale.
    grow = _ring(n_next) / _ring(n) if n > 1 else None
    assumptions = [
        f"the per-replica batch stays {last.per_replica_batch:.0f} (each added worker brings its "
        "own batch)",
        f"computation per step stays as measured at ×{n} ({compute_ms:.1f} ms): each worker has a "
        "device of its own",
        f"everything else in the step stays as measured at ×{n} ({other_ms:.1f} ms)",
    ]
    if grow is not None:
        comm_next = comm_ms * grow
        assumptions.append(
            f"exposed communication ({comm_ms:.1f} ms at ×{n}) grows as a bandwidth-bound ring "
            f"all-reduce: ×{grow:.2f} to {comm_next:.1f} ms"
        )
    else:
        comm_next = comm_ms
        assumptions.append(
            "one worker measured: no communication to extrapolate (projected as none)"
        )
    assumptions.append("no new bottleneck (input, network, stragglers) appears at the larger size")
    step_next = compute_ms + comm_next + other_ms
    if step_next <= 0:
        return None
    samples_next = n_next * last.per_replica_batch / (step_next / 1000.0)
    base = min(mine, key=lambda r: r.workers)
    reason = f"projected {_fmt(samples_next)} samples/s at ×{n_next} (step {step_next:.1f} ms)"
    if base.samples_per_s and base.workers:
        efficiency = samples_next / base.samples_per_s / (n_next / base.workers)
        reason += f"; efficiency {efficiency:.0%} against ×{base.workers}"
    if last.samples_per_s:
        reason += f"; measured at ×{n}: {_fmt(last.samples_per_s)} samples/s"
    return Recommendation(
        goal="projection",
        strategy=strategy,
        workers=n_next,
        value=samples_next,
        unit="samples/s",
        reason=reason,
        projected=True,
        assumptions=assumptions,
    )


def _ring(n: int) -> float:
    return 2.0 * (n - 1) / n


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"
