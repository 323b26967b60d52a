"""The diagnosis report: one versioned model that every renderer and the JSON export use.

``SCHEMA_VERSION`` grows by one on any change that could make an older reader misread a report;
adding an optional field keeps the version. ``advisor schema`` prints the JSON Schema generated
from these models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.analysis.comparison_model import RunComparison
from advisor.analysis.history import HistoryGate
from advisor.analysis.registry import deprecated_facts_text, resolve_fact

REPORT_SCHEMA_VERSION = 1

Status = Literal["fail", "pass", "unknown", "n/a", "error"]
Severity = Literal["info", "warning", "error"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
STATUS_ORDER = {"fail": 0, "error": 1, "unknown": 2, "n/a": 3, "pass": 4}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    """One measured fact behind a finding."""

    fact: str
    value: Any
    unit: str = ""


class Measured(_Model):
    """The gain measured by trying this finding's fix on the run's own model and input (the
    what-if, docs/whatif.md): the best of the candidates that implement the fix, or, for a fix
    that cannot be tried here, its measured ceiling (``ceiling``)."""

    candidate: str = Field(description="the what-if candidate, e.g. parallel_map")
    label: str | None = Field(default=None, description="what was changed, in words")
    speedup: float = Field(
        description="samples/s with the change ÷ unchanged (median of paired rounds)"
    )
    band: float | None = Field(
        default=None, description="± noise band of the speedup, as a share of it"
    )
    outside_band: bool | None = Field(default=None, description="the gain is larger than its band")
    seconds: float | None = Field(default=None, description="what trying it cost, seconds")
    samples_per_s: float | None = None
    changes_optimisation: bool = Field(
        default=False, description="the change alters training (a larger batch)"
    )
    ceiling: bool = Field(
        default=False,
        description="not the fix itself but the most it can gain: the same model with "
        "the cost it removes taken away (docs/whatif.md)",
    )
    text: str = Field(description="e.g. 'measured: 2.4× (±4%) in 3.1 s'")

    @property
    def time_saved(self) -> float:
        """The share of step time the change saves (1 − 1 ÷ speedup; ≤ 0 for no gain)."""
        return 1.0 - 1.0 / self.speedup if self.speedup > 0 else 0.0

    @property
    def assured_time_saved(self) -> float:
        """The share of step time the change saves at the low end of its noise band (0 when the
        band reaches no gain): what the ranking credits, so that a gain noise could explain
        (1.18× ± 27%) does not outrank a finding on its estimate."""
        low = self.speedup * (1.0 - self.band) if self.band is not None else self.speedup
        return max(0.0, 1.0 - 1.0 / low) if low > 0 else 0.0


class Finding(_Model):
    """The outcome of one rule on one run."""

    code: str
    name: str
    section: str
    summary: str
    status: Status
    severity: Severity = Field(
        description="for a failure, its severity on this run; otherwise the rule's default"
    )
    message: str = Field(description="what was found, with the measured values")
    fix: str | None = Field(default=None, description="what to change (failures only)")
    impact: float | None = Field(
        default=None,
        description="estimated share of training time (or cost) a fix would save, 0..1: failures "
        "are ranked by it (each rule's docs say how it is estimated)",
    )
    evidence: list[Evidence] = Field(default_factory=list)
    thresholds: dict[str, Any] = Field(default_factory=dict)
    missing: list[str] = Field(
        default_factory=list, description="facts that were not measured (unknown)"
    )
    measure: str | None = Field(
        default=None, description="how to measure what is missing (unknown)"
    )
    note: str | None = None
    error: str | None = Field(
        default=None, description="why the rule could not be evaluated (error)"
    )
    measured: Measured | None = Field(
        default=None, description="the gain measured by trying the fix (the what-if), when it ran"
    )
    ceilings: list[Measured] = Field(
        default_factory=list,
        description="the measured ceilings the evidence bears on (the most a fix of that cost can "
        "gain), beside `measured` and not repeating it",
    )
    docs: str = Field(description="path of the rule's documentation page")


class SectionCoverage(_Model):
    title: str
    decided: int = Field(description="rules that passed or failed")
    total: int
    not_applicable: int = 0
    unknown: int = 0


class ToDecide(_Model):
    """What would decide some of the unknown rules, and which."""

    enable: str = Field(
        description="what to enable: baseline, profile_steps, a GPU, instance_type, a sweep, …"
    )
    how: str
    rules: list[str]


class Coverage(_Model):
    """Checklist coverage as docs/checklist.md defines it: rules that passed or failed ÷ rules
    evaluated. Rules that do not apply (n/a) and rules not decided (unknown) are counted apart."""

    decided: int = Field(description="rules that passed or failed")
    total: int
    fraction: float = Field(description="decided ÷ total")
    not_applicable: int = 0
    unknown: int = 0
    sections: dict[str, SectionCoverage]
    to_decide: list[ToDecide] = Field(
        default_factory=list,
        description="for the unknown rules: what would decide them, most rules first",
    )


class Summary(_Model):
    """Findings per status, and failures per severity."""

    fail: int = 0
    passed: int = 0
    unknown: int = 0
    not_applicable: int = 0
    error: int = 0
    by_severity: dict[str, int] = Field(default_factory=dict)


class RunInfo(_Model):
    run_id: str
    path: str | None = None
    name: str | None = None
    status: str | None = None
    created: float | None = None
    backend: str | None = None
    strategy: str | None = (
        None  # as every view names it: multiworker, mirrored, jax, horovod, single
    )
    num_workers: int | None = None
    instance_type: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class FactValue(_Model):
    value: Any
    unit: str = ""
    source: str = ""


# A report's facts, fact name -> FactValue (``Report.facts``): what a view that reads facts takes.
Facts = Mapping[str, FactValue]


def fact_value(facts: Facts, name: str) -> Any:
    """The value of the fact ``name`` in a report's facts (``Report.facts``), None when it was not
    measured: the one way a view reads a fact. A deprecated name reads its new name's fact."""
    fact = facts.get(resolve_fact(name, "fact_value"))
    return None if fact is None else fact.value


def as_facts(values: Mapping[str, Any]) -> dict[str, FactValue]:
    """Plain fact values (an analysis' ``facts``) as a report holds them: the one conversion, made
    where plain values reach a view that reads facts."""
    return {name: FactValue(value=value) for name, value in values.items()}


class RegressionMetric(_Model):
    name: str
    unit: str
    baseline: float | None
    current: float | None
    change_pct: float | None = Field(description="(current − baseline) ÷ baseline × 100")
    regressed: bool
    note: str | None = None


class Regression(_Model):
    """The CI gate: throughput and cost per sample versus a baseline run (with a baseline run,
    its noise-aware comparison part by part), and the history gate of ``check --history``."""

    baseline_run: str
    max_regression_pct: float
    metrics: list[RegressionMetric]
    failed: bool
    comparison: RunComparison | None = Field(
        default=None,
        description="the noise-aware comparison with a baseline run: every figure and part with "
        "its interval, and the verdict (absent for a baseline read from a saved report)",
    )
    history: HistoryGate | None = Field(
        default=None, description="the history gate: the latest change point of the run's series"
    )

    @property
    def judgeable(self) -> bool:
        """False when the comparison with a baseline run cannot tell (too short or too noisy);
        a history too short for change points gates nothing and says so."""
        return self.comparison is None or self.comparison.verdict != "not judgeable"


class Settings(_Model):
    select: list[str]
    extend_select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    fail_on: Severity = "warning"
    min_measured_steps: int = 20
    thresholds: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="overrides only"
    )
    config_file: str | None = None


# The columns of a findings frame (``Report.to_frame``, ``advisor.findings_frame``), in order.
FINDING_COLUMNS = (
    "code",
    "name",
    "section",
    "status",
    "severity",
    "impact",
    "message",
    "fix",
    "missing",
    "measure",
    "error",
    "docs",
)


class Report(_Model):
    """Everything ``advisor check`` found about one run."""

    schema_version: int = REPORT_SCHEMA_VERSION
    advisor_version: str
    generated_at: str = Field(description="ISO 8601 time the report was made")
    run: RunInfo
    findings: list[Finding] = Field(
        description="failures first, ranked by estimated time saved (impact), severity breaking "
        "ties"
    )
    coverage: Coverage
    summary: Summary
    facts: dict[str, FactValue] = Field(
        default_factory=dict,
        description=" ".join(("The run's facts by name.", deprecated_facts_text())).strip(),
    )
    errors: list[str] = Field(
        default_factory=list, description="problems reading the run or deriving facts"
    )
    regression: Regression | None = None
    settings: Settings | None = None
    incomplete: list[str] = Field(
        default_factory=list,
        description="why the run cannot be judged (killed, running, failed, empty, a collector "
        "failed, unreadable data): `advisor check` exits 3 unless --allow-incomplete",
    )

    def fact(self, name: str) -> Any:
        """The value of the fact ``name``; None when it was not measured."""
        return fact_value(self.facts, name)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "fail"]

    def failing(self, fail_on: str) -> list[Finding]:
        """Failures at or above the ``fail_on`` severity."""
        level = SEVERITY_RANK[fail_on]
        return [f for f in self.failures if SEVERITY_RANK[f.severity] >= level]

    def unknown_by_measure(self) -> list[tuple[str, list[str]]]:
        """The unknown rules that a measurement would decide, grouped by how to measure it (the
        rule's ``measure``), most rules first: what ``advisor check`` and the TUI list."""
        groups: dict[str, list[str]] = {}
        for f in self.findings:
            if f.status == "unknown" and f.missing:
                groups.setdefault(f.measure or "not measurable yet", []).append(f.code)
        return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))

    def to_frame(self) -> Any:
        """One row per finding (pandas), with the run's id; ``impact`` is a fraction (0..1)."""
        from advisor.dataframes import to_frame

        rows = [
            {"run_id": self.run.run_id, **f.model_dump(include=set(FINDING_COLUMNS))}
            for f in self.findings
        ]
        return to_frame(
            rows,
            ["run_id", *FINDING_COLUMNS],
            {"impact": "fraction"},
            run_id=self.run.run_id,
            generated_at=self.generated_at,
        )

    def exit_code(self, fail_on: str, allow_incomplete: bool = False) -> int:
        """0 clean, 1 findings at or above ``fail_on`` or a regression, 2 a rule that errored,
        3 a run that cannot be judged, or else a comparison that cannot tell (unless
        ``allow_incomplete``)."""
        if any(f.status == "error" for f in self.findings):
            return 2
        if self.incomplete and not allow_incomplete:
            return 3
        if self.failing(fail_on) or (self.regression is not None and self.regression.failed):
            return 1
        if self.regression is not None and not self.regression.judgeable and not allow_incomplete:
            return 3
        return 0


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`Report` (draft 2020-12), with its schema version."""
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"advisor-report-v{REPORT_SCHEMA_VERSION}.schema.json"
    schema["title"] = "advisor diagnosis report"
    schema["properties"]["schema_version"]["const"] = REPORT_SCHEMA_VERSION
    return schema
