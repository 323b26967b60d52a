"""What a comparison of two runs says: each figure's change with its interval, and the verdict.

Plain pydantic models, so a report carries them as JSON and every renderer reads the same thing;
and the one name of a part of the fit (`part_label`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FigureVerdict = Literal["slower", "faster", "within noise", "too few", "one measurement"]
Verdict = Literal["regression", "no regression", "contention", "not judgeable"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FigureChange(_Model):
    """One figure of two runs: samples/s, samples/$, or one part of the fit in ms per step."""

    key: str = Field(description="throughput.samples_per_s, part.validation, part.callback.X.hook")
    label: str = Field(description="what it is, for people: 'MetricsLogger.on_train_batch_end'")
    unit: str
    higher_is_better: bool
    baseline: float | None = Field(description="the baseline's median")
    current: float | None = Field(description="this run's median")
    change: float | None = Field(description="the shift current − baseline (Hodges–Lehmann)")
    change_pct: float | None = Field(description="the shift as a percentage of the baseline")
    low_pct: float | None = Field(default=None, description="95 % interval of change_pct, low")
    high_pct: float | None = Field(default=None, description="95 % interval of change_pct, high")
    step_share_pct: float | None = Field(
        default=None,
        description="a part's shift in ms/step ÷ the baseline's time per step, in percent: what "
        "the change costs the fit",
    )
    step_share_low_pct: float | None = Field(
        default=None, description="the low end of step_share_pct's 95 % interval"
    )
    detectable_pct: float | None = Field(
        default=None,
        description="the smallest change this pair could tell from noise, in percent (of the "
        "figure for rates, of the baseline's time per step for parts)",
    )
    baseline_n: int = 0
    current_n: int = 0
    verdict: FigureVerdict
    regressed: bool = False


class Contention(_Model):
    """How much of the host other processes took during each run (host telemetry)."""

    baseline_others_cpu: float | None = Field(description="share of the host's CPU, 0..1")
    current_others_cpu: float | None
    baseline_steal: float | None = None
    current_steal: float | None = None
    differs: bool = Field(description="the runs shared their host differently enough to matter")
    note: str | None = None


class RunComparison(_Model):
    """Two runs compared figure by figure, each change set against the noise of both runs."""

    baseline_run: str
    method: str = "Hodges–Lehmann shift, Mann–Whitney 95 % interval"
    max_regression_pct: float
    rates: list[FigureChange] = Field(default_factory=list)
    parts: list[FigureChange] = Field(default_factory=list)
    contention: Contention | None = None
    appeared: list[str] = Field(default_factory=list, description="failing codes new in this run")
    disappeared: list[str] = Field(
        default_factory=list, description="failing codes of the baseline gone in this run"
    )
    differences: list[str] = Field(
        default_factory=list,
        description="what the two runs ran differently ('global batch size 64 → 128'): the "
        "comparison holds, but a change may come from that",
    )
    verdict: Verdict
    summary: str = Field(description="one line: what got slower, or why nothing is judged")
    failed: bool

    def regressed_parts(self) -> list[FigureChange]:
        return [p for p in self.parts if p.regressed]


def part_label(key: str) -> str:
    """'Logger.on_train_batch_end', 'the steps themselves', 'validation' for a part's key."""
    name = key.removeprefix("part.")
    if name.startswith("callback."):
        return name.removeprefix("callback.")
    return {"train_steps": "the steps themselves", "epoch_boundary": "epoch boundaries"}.get(
        name, name
    )
