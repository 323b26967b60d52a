"""A store's history as text (a table and its change points) and as a plot (matplotlib, imported
when the plot is drawn; built without pyplot, as the scaling plots are)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.numbers import percent

if TYPE_CHECKING:
    from advisor.analysis.history import History, HistoryChange

METRIC_LABEL = {"samples_per_s": "samples/s", "goodput": "goodput"}
MAX_TICK_LABELS = 60


def metric_label(metric: str) -> str:
    if metric in METRIC_LABEL:
        return METRIC_LABEL[metric]
    return metric.removeprefix("part.").removeprefix("callback.") + " (ms/step)"


def change_line(change: HistoryChange) -> str:
    """'samples/s -21.4% at c10 (point 10, after c09): …, confidence 0.9999, 10 point(s) before,
    20 after': where it is, the points either side of it, its size and confidence."""
    size = "" if change.change_pct is None else f"{change.change_pct:+.1f}% "
    share = (
        f", {change.step_share_pct:+.1f}% of a step" if change.step_share_pct is not None else ""
    )
    after = f", after {change.before_label}" if change.before_label else ""
    return (
        f"{metric_label(change.metric)} {size}at {change.label} (point {change.index}{after}): "
        f"{change.before_mean:,.4g} → {change.after_mean:,.4g}{share}, "
        f"confidence {change.confidence:.4f}, {change.before_n} point(s) before, "
        f"{change.after_n} after"
    )


def history_text(history: History) -> str:
    """The table of points (a marker where a change point starts) and the change points."""
    starts = {c.index: "◆" for c in history.changes}
    head = f"History of {history.selection}"
    head += f", one point per {history.group_by}" if history.group_by else ", one point per run"
    lines = [head + f": {len(history.points)} point(s)", ""]
    lines.append(f"  {'#':>3}  {'point':<30} {'runs':>4} {'samples/s':>12} {'goodput':>8}  created")
    for i, p in enumerate(history.points):
        rate = "-" if p.samples_per_s is None else f"{p.samples_per_s:,.1f}"
        good = "-" if p.goodput is None else percent(p.goodput, 0, fraction=True)
        mark = starts.get(i, " ")
        label = p.label if len(p.label) <= 30 else p.label[:29] + "…"
        lines.append(
            f"{mark} {i:>3}  {label:<30} {len(p.run_ids):>4} {rate:>12} {good:>8}  {p.created}"
        )
    lines.append("")
    if history.changes:
        lines.append("Change points (◆ marks the first point after each):")
        lines += ["  " + change_line(c) for c in history.changes]
    else:
        lines.append("No change points.")
    lines.append(f"method: {history.method}")
    return "\n".join(lines) + "\n"


def history_figure(history: History) -> Any:
    """samples/s, goodput and the parts with a change point (ms/step), one panel each; every
    change point a dashed line on every panel, labelled on its own figure's panel."""
    from matplotlib.figure import Figure

    parts = sorted({c.metric for c in history.changes if c.metric not in METRIC_LABEL})
    panels = ["samples_per_s", "goodput"] + (["parts"] if parts else [])
    fig = Figure(figsize=(8.0, 2.4 * len(panels)), dpi=100, layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    xs = list(range(len(history.points)))
    for ax, panel in zip(axes, panels, strict=True):
        if panel == "parts":
            for key in parts:
                ys = [p.parts.get(key, 0.0) for p in history.points]
                ax.plot(xs, ys, "o-", ms=3, label=metric_label(key).removesuffix(" (ms/step)"))
            ax.set_ylabel("ms per step")
            ax.legend(fontsize="small")
        else:
            ys = [getattr(p, panel) for p in history.points]
            ax.plot(xs, [float("nan") if y is None else y for y in ys], "o-", ms=3)
            ax.set_ylabel(METRIC_LABEL[panel])
        ax.grid(True, alpha=0.3)
        for change in history.changes:
            ax.axvline(change.index - 0.5, color="tab:red", ls="--", lw=1)
            own = change.metric == panel or (panel == "parts" and change.metric in parts)
            if own and change.change_pct is not None:
                size = change.step_share_pct if change.step_share_pct is not None else None
                label = (
                    f"{size:+.0f}% of a step" if size is not None else f"{change.change_pct:+.0f}%"
                )
                ax.annotate(
                    label, (change.index - 0.4, ax.get_ylim()[1]), color="tab:red", va="top"
                )
    axes[0].set_title(f"History of {history.selection}")
    axes[-1].set_xlabel(f"point ({history.group_by or 'run'}), oldest first")
    if len(xs) <= MAX_TICK_LABELS:  # each point named by its commit (or run id), shortened
        names = [p.label[:15] for p in history.points]
        axes[-1].set_xticks(xs, names, rotation=90, fontsize="x-small")
    return fig


def write_history_plot(history: History, path: str | Path) -> Path:
    out = Path(path)
    history_figure(history).savefig(out)
    return out
