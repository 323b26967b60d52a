"""A store's history: samples/s, goodput and each part of the fit (ms per step) of the runs
sharing a name or tag, over time, with their change points (``advisor.analysis.change_points``).

On a shared machine samples/s of one run varies by tens of percent with the load beside it; a
part's own time (a callback hook, validation) varies much less, so a change in one part is
found in its own series even when samples/s hides it. A part is followed when it costs at
least ``MIN_PART_SHARE`` of a step in some point, and its change points are listed when they
move it by at least that much.

Runs are ordered by creation. With ``group_by`` (a tag such as the commit), the runs sharing
the tag's value are one point, at the median of their figures, placed at its first run; runs
without the tag are left out. The history gate reads the latest change point of samples/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.analysis.change_points import MAX_PVALUE, MIN_SIZE, change_points
from advisor.analysis.comparison_model import part_label
from advisor.stats import median

METRICS = ("samples_per_s", "goodput")
MIN_PART_SHARE = 0.01


@dataclass(frozen=True)
class RunFigures:
    """What a history needs of one run."""

    run_id: str
    created: str
    tags: dict[str, str]
    samples_per_s: float | None
    goodput: float | None
    parts: dict[str, float] = field(default_factory=dict)  # key → median ms/step
    step_ms: float | None = None  # median wall ms per step


class HistoryPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="the group's tag value, or the run id")
    run_ids: list[str]
    created: str
    samples_per_s: float | None
    goodput: float | None
    step_ms: float | None = None
    parts: dict[str, float] = Field(default_factory=dict, description="ms/step per part")


class HistoryChange(BaseModel):
    """A change point: the first point after it, its size, confidence and support."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="samples_per_s, goodput or a part's key (ms/step)")
    index: int = Field(description="position of the first point after the change")
    label: str = Field(description="that point's tag value or run id")
    before_label: str | None = Field(
        default=None, description="the tag value or run id of the last point before the change"
    )
    before_mean: float
    after_mean: float
    change_pct: float | None
    step_share_pct: float | None = Field(
        default=None, description="a part's change in ms/step ÷ the time per step before it, %"
    )
    confidence: float = Field(description="1 − the p-value of Welch's t-test across the change")
    before_n: int
    after_n: int


class History(BaseModel):
    model_config = ConfigDict(extra="forbid")

    selection: str = Field(description="which runs: name=… or tag=…")
    group_by: str | None = None
    method: str = (
        f"E-divisive means, each split kept when Welch's t-test gives p < {MAX_PVALUE} "
        f"(at least {MIN_SIZE} points either side)"
    )
    points: list[HistoryPoint]
    changes: list[HistoryChange]

    def latest(self) -> HistoryChange | None:
        """The latest change point of any figure (the costliest of those at the same point)."""
        if not self.changes:
            return None
        last = max(c.index for c in self.changes)
        at = [c for c in self.changes if c.index == last]
        return max(at, key=lambda c: abs(c.step_share_pct or c.change_pct or 0.0))


def is_regression(change: HistoryChange, max_regression_pct: float) -> bool:
    """A drop of samples/s or goodput, or a part's rise (as a share of the step), beyond the
    size that matters."""
    if change.metric in METRICS:
        return (change.change_pct or 0.0) < -max_regression_pct
    return (change.step_share_pct or 0.0) > max_regression_pct


def build_history(
    runs: Sequence[RunFigures], selection: str, group_by: str | None = None
) -> History:
    """The history of ``runs`` (any order) and its change points per metric."""
    ordered = sorted(runs, key=lambda r: (r.created, r.run_id))
    points = _points(ordered, group_by)
    changes: list[HistoryChange] = []
    for metric in (*METRICS, *followed_parts(points)):
        changes += _changes(points, metric)
    return History(selection=selection, group_by=group_by, points=points, changes=changes)


def _points(ordered: Sequence[RunFigures], group_by: str | None) -> list[HistoryPoint]:
    if group_by is None:
        groups = [(r.run_id, [r]) for r in ordered]
    else:
        by_value: dict[str, list[RunFigures]] = {}
        for r in ordered:
            if group_by in r.tags:
                by_value.setdefault(r.tags[group_by], []).append(r)
        groups = list(by_value.items())
    return [
        HistoryPoint(
            label=label,
            run_ids=[r.run_id for r in members],
            created=members[0].created,
            samples_per_s=median(r.samples_per_s for r in members),
            goodput=median(r.goodput for r in members),
            step_ms=median(r.step_ms for r in members),
            parts=_median_parts(members),
        )
        for label, members in groups
    ]


def followed_parts(points: Sequence[HistoryPoint]) -> list[str]:
    """The parts that cost at least ``MIN_PART_SHARE`` of a step in some point."""
    keys: list[str] = []
    for p in points:
        for key, ms in p.parts.items():
            if key not in keys and p.step_ms and ms >= MIN_PART_SHARE * p.step_ms:
                keys.append(key)
    return keys


def _value(point: HistoryPoint, metric: str) -> float | None:
    if metric in METRICS:
        return getattr(point, metric)
    return point.parts.get(metric, 0.0) if point.parts else None


def _changes(points: Sequence[HistoryPoint], metric: str) -> list[HistoryChange]:
    known = [(i, v) for i, p in enumerate(points) if (v := _value(p, metric)) is not None]
    out = []
    for cp in change_points([v for _, v in known]):
        index = known[cp.index][0]
        step = median(p.step_ms for p in points[:index])
        share = None
        if metric not in METRICS and step:
            share = (cp.after_mean - cp.before_mean) / step * 100.0
            if abs(share) < MIN_PART_SHARE * 100.0:
                continue  # a part's change of under 1 % of a step: real, but not worth a line
        out.append(
            HistoryChange(
                metric=metric,
                index=index,
                label=points[index].label,
                before_label=points[known[cp.index - 1][0]].label,
                before_mean=cp.before_mean,
                after_mean=cp.after_mean,
                change_pct=cp.change_pct,
                step_share_pct=share,
                confidence=cp.confidence,
                before_n=cp.before_n,
                after_n=cp.after_n,
            )
        )
    return out


def _median_parts(members: Sequence[RunFigures]) -> dict[str, float]:
    keys = {k for r in members for k in r.parts}
    out = {}
    for key in sorted(keys):
        value = median(r.parts.get(key, 0.0) for r in members)
        if value is not None:
            out[key] = value
    return out


class HistoryGate(BaseModel):
    """The history gate: the latest change point of a history, judged."""

    model_config = ConfigDict(extra="forbid")

    selection: str
    points: int
    latest: HistoryChange | None
    verdict: Literal["regression", "no regression", "too short"]
    summary: str
    failed: bool


def history_gate(history: History, max_regression_pct: float) -> HistoryGate:
    """Fails when the latest change point is a regression beyond ``max_regression_pct``; too
    few points to find a change point is *too short*: it gates nothing, and says so."""
    n = len(history.points)
    latest = history.latest()
    verdict: Literal["regression", "no regression", "too short"] = "no regression"
    if n < 2 * MIN_SIZE:
        verdict = "too short"
        summary = f"{n} point(s) in the history of {history.selection}: at least {2 * MIN_SIZE}"
    elif latest is None:
        summary = f"no change point in {n} points of {history.selection}"
    else:
        size = latest.step_share_pct if latest.step_share_pct is not None else latest.change_pct
        what = "of a step" if latest.step_share_pct is not None else ""
        summary = (
            f"latest change point: {figure_name(latest.metric)} at {latest.label}{_after(latest)} "
            f"({(size or 0.0):+.1f}% {what}, confidence {latest.confidence:.4f}, "
            f"{latest.before_n} point(s) before, {latest.after_n} after)"
        ).replace("% ,", "%,")
        if is_regression(latest, max_regression_pct):
            verdict = "regression"
    return HistoryGate(
        selection=history.selection,
        points=n,
        latest=latest,
        verdict=verdict,
        summary=summary,
        failed=verdict == "regression",
    )


def _after(change: HistoryChange) -> str:
    return f", after {change.before_label}" if change.before_label else ""


def figure_name(metric: str) -> str:
    """'samples/s', 'goodput', or a part as the pair comparison names it: '`on_train_batch_end`
    of `Logger`', 'the steps themselves', 'validation'."""
    if metric in METRICS:
        return {"samples_per_s": "samples/s"}.get(metric, metric)
    label = part_label(metric)
    if metric.startswith("part.callback."):
        cls, _, hook = label.rpartition(".")
        return f"`{hook}` of `{cls}`"
    return label
