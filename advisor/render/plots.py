"""Plots of the scaling table (matplotlib, no display needed): one figure per question.

- epoch time: absolute mean epoch time per worker count, with the spread over repeats;
- speedup: relative to the smallest count, log2 axes, against the ideal line;
- efficiency: speedup ÷ (N ÷ N₀), with the 75 % line under which scaling is called poor;
- computation vs other: stacked shares of the step (computation, communication, other);
- energy: Wh per epoch; samples per dollar: what the money buys at each size;
- memory: the peak resident memory of one training process (solid) and, where the backend reports
  it, one device's allocator peak (dashed), per worker count.

Each ``*_figure`` returns a ``matplotlib.figure.Figure`` (or None when the table has no data for
it), built without pyplot so nothing global changes; ``write_plots`` saves them as PNG (and SVG).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from advisor.analysis.scaling import Row, ScalingTable
from advisor.numbers import percent

EFFICIENCY_THRESHOLD = 0.75
HATCHES = {"computation": "", "communication (not overlapped)": "//", "other": ".."}


def _figure(title: str) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _log2_x(ax: Any, workers: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(workers))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("workers")


def _series(
    table: ScalingTable, value: Callable[[Row], float | None]
) -> dict[str, tuple[list[int], list[float]]]:
    out: dict[str, tuple[list[int], list[float]]] = {}
    for strategy in table.strategies:
        xs, ys = [], []
        for r in sorted((r for r in table.rows if r.strategy == strategy), key=lambda r: r.workers):
            v = value(r)
            if v is not None:
                xs.append(r.workers)
                ys.append(v)
        if xs:
            out[strategy] = (xs, ys)
    return out


def _line_figure(
    table: ScalingTable, title: str, ylabel: str, value: Callable[[Row], float | None]
) -> Any:
    series = _series(table, value)
    if not series:
        return None
    fig, ax = _figure(title)
    for strategy, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=strategy)
    _log2_x(ax, [x for xs, _ in series.values() for x in xs])
    ax.set_ylabel(ylabel)
    ax.legend()
    return fig


def epoch_time_figure(table: ScalingTable) -> Any:
    series = _series(table, lambda r: r.epoch_s)
    if not series:
        return None
    fig, ax = _figure("Mean epoch time")
    for strategy, (xs, ys) in series.items():
        rows = {r.workers: r for r in table.rows if r.strategy == strategy}
        low = [y - _or(rows[x].epoch_s_min, y) for x, y in zip(xs, ys)]
        high = [_or(rows[x].epoch_s_max, y) - y for x, y in zip(xs, ys)]
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=4, label=strategy)
    _log2_x(ax, [x for xs, _ in series.values() for x in xs])
    ax.set_ylabel("seconds per epoch (min–max over repeats)")
    ax.set_ylim(bottom=0)
    ax.legend()
    return fig


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def speedup_figure(table: ScalingTable) -> Any:
    series = _series(table, lambda r: r.speedup)
    if not series:
        return None
    fig, ax = _figure("Relative speedup of epoch time")
    all_x = sorted({x for xs, _ in series.values() for x in xs})
    base = min(all_x)
    ax.plot(all_x, [x / base for x in all_x], linestyle="--", color="grey", label="ideal")
    for strategy, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=strategy)
    _log2_x(ax, all_x)
    ax.set_yscale("log", base=2)
    ax.set_ylabel(f"speedup vs {base} worker(s)")
    ax.legend()
    return fig


def efficiency_figure(table: ScalingTable) -> Any:
    fig = _line_figure(
        table,
        "Scaling efficiency",
        "efficiency (%)",
        lambda r: None if r.efficiency is None else 100.0 * r.efficiency,
    )
    if fig is not None:
        ax = fig.axes[0]
        ax.axhline(
            100.0 * EFFICIENCY_THRESHOLD,
            linestyle=":",
            color="red",
            label=f"poor below {percent(EFFICIENCY_THRESHOLD, 0, fraction=True)}",
        )
        ax.set_ylim(0, max(110.0, ax.get_ylim()[1]))
        ax.legend()
    return fig


def computation_figure(table: ScalingTable) -> Any:
    rows = [r for r in table.rows if r.other_percent is not None]
    if not rows:
        return None
    fig, ax = _figure("Computation vs other (share of step time)")
    # One group of bars per strategy, a gap between groups; ×N under each bar, the strategy below.
    x: list[float] = []
    groups: dict[str, list[float]] = {}
    pos = 0.0
    for i, r in enumerate(rows):
        if i and r.strategy != rows[i - 1].strategy:
            pos += 0.6
        x.append(pos)
        groups.setdefault(r.strategy, []).append(pos)
        pos += 1.0
    bottom = [0.0] * len(rows)
    parts = {
        "computation": [r.compute_percent or 0.0 for r in rows],
        "communication (not overlapped)": [r.exposed_communication_percent or 0.0 for r in rows],
        "other": [r.other_percent or 0.0 for r in rows],
    }
    for name, values in parts.items():
        ax.bar(
            x,
            values,
            bottom=bottom,
            label=name,
            hatch=HATCHES[name],
            edgecolor="black",
            linewidth=0.5,
        )
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(x)
    ax.set_xticklabels([f"×{r.workers}" for r in rows])
    for strategy, xs in groups.items():
        ax.annotate(
            strategy,
            xy=(sum(xs) / len(xs), 0),
            xycoords=("data", "axes fraction"),
            xytext=(0, -22),
            textcoords="offset points",
            ha="center",
            va="top",
        )
    ax.set_ylabel("% of step time")
    ax.set_ylim(0, 100)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    return fig


def energy_figure(table: ScalingTable) -> Any:
    return _line_figure(
        table, "GPU energy per epoch", "Wh per epoch", lambda r: r.energy_wh_per_epoch
    )


def cost_figure(table: ScalingTable) -> Any:
    return _line_figure(table, "Samples per dollar", "samples / $", lambda r: r.samples_per_dollar)


def memory_figure(table: ScalingTable) -> Any:
    host = _series(table, lambda r: r.host_peak_mb)
    device = _series(table, lambda r: r.device_peak_mb)
    if not host and not device:
        return None
    fig, ax = _figure("Peak memory per process")
    for label, series, style in (("host RSS", host, "-"), ("device", device, "--")):
        for strategy, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o", linestyle=style, label=f"{strategy} {label}")
    _log2_x(ax, [x for s in (host, device) for xs, _ in s.values() for x in xs])
    ax.set_ylabel("MB (largest over repeats)")
    ax.set_ylim(bottom=0)
    ax.legend()
    return fig


PLOTS: dict[str, tuple[Callable[[ScalingTable], Any], str]] = {
    "epoch_time": (epoch_time_figure, "no epoch times"),
    "speedup": (speedup_figure, "no speedup (needs epoch times)"),
    "efficiency": (efficiency_figure, "no efficiency (needs epoch times)"),
    "computation_vs_other": (computation_figure, "computation vs other: no trace data"),
    "energy": (energy_figure, "energy: no GPU data"),
    "samples_per_dollar": (cost_figure, "samples per dollar: no price"),
    "memory": (memory_figure, "memory: no memory data"),
}


def write_plots(
    table: ScalingTable, out_dir: Path, formats: Sequence[str] = ("png",)
) -> tuple[list[Path], list[str]]:
    """Save every plot the table has data for; returns (written files, notes on skipped plots)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    skipped: list[str] = []
    for name, (make, missing) in PLOTS.items():
        fig = make(table)
        if fig is None:
            skipped.append(missing)
            continue
        for fmt in formats:
            path = out_dir / f"{name}.{fmt}"
            fig.savefig(
                path, format=fmt, metadata={"Software": None} if fmt == "png" else {"Date": None}
            )
            written.append(path)
    return written, skipped
