"""The plot of one run (matplotlib, no display): its epochs — training and validation time, and
samples/s.

Drawn from the run's overview (:class:`~advisor.analysis.overview.RunOverview`), like ``advisor
show``'s epoch table; saved by :func:`write_run_plots` for ``advisor export --to mlflow``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.analysis.overview import RunOverview


def epochs_figure(view: RunOverview) -> Any:
    """Stacked training/validation seconds per epoch, samples/s on a second axis; None without
    epochs."""
    if not view.epochs:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.set_title(f"epochs of {view.run_id}")
    xs = [e.epoch for e in view.epochs]
    train = [e.train_seconds for e in view.epochs]
    ax.bar(xs, train, label="training", color="#4C72B0")
    ax.bar(
        xs, [e.val_seconds for e in view.epochs], bottom=train, label="validation", color="#DD8452"
    )
    ax.set_xlabel("epoch")
    ax.set_ylabel("seconds")
    ax.set_xticks(xs)
    rates = [(e.epoch, e.samples_per_s) for e in view.epochs if e.samples_per_s is not None]
    if rates:
        right = ax.twinx()
        right.plot(
            [x for x, _ in rates],
            [r for _, r in rates],
            marker="o",
            color="#55A868",
            label="samples/s",
        )
        right.set_ylabel("samples/s (training)")
        right.set_ylim(bottom=0)
        right.legend(loc="upper right")
    ax.legend(loc="upper left")
    return fig


def write_run_plots(view: RunOverview, out_dir: Path) -> list[Path]:
    """Save the run's plots as PNG into ``out_dir``; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = epochs_figure(view)
    if fig is None:
        return []
    path = out_dir / "epochs.png"
    fig.savefig(path, format="png", metadata={"Software": None})
    return [path]
