"""The scaling table as text, JSON, CSV or Markdown (one renderer per format, one table model).

JSON is the table itself with its ``schema_version`` (a saved report can be reloaded and rendered
again); CSV has one line per strategy × workers with every column — ``recommended`` names the goals
a configuration is best for — and one more line per projection (``projected`` true, only the
projected columns filled); text and Markdown open with the recommendations (the best configuration
per goal, and a labelled projection with its assumptions) and the sweep's D6 findings, then group
the columns the way people read them: time, cost, accelerators and energy, memory peaks,
computation vs other.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from advisor.analysis.scaling import Recommendation, Row, ScalingTable
from advisor.numbers import percent, readable

FORMATS = ("text", "json", "csv", "md")

Fmt = Callable[[Any], str]


def _num(digits: int) -> Fmt:
    return lambda v: readable(v, digits)


def _pct(v: Any) -> str:
    return percent(v, 1)


def _sol(fraction: float | None) -> str:
    """A fraction of speed of light to two significant digits (a CPU fit may reach 0.002%)."""
    return "—" if fraction is None else f"{100 * fraction:.2g}%"


def _frac_pct(v: Any) -> str:
    return percent(v, 0, fraction=True)


def _epoch(row: Row) -> str:
    if row.epoch_s is None:
        return "—"
    text = f"{row.epoch_s:.3f} s"
    if row.epoch_s_std is not None:
        text += f" ± {row.epoch_s_std:.3f}"
    return text


def _mb(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1024:.2f} GB" if v >= 1024 else f"{v:.0f} MB"


# (section, [(header, value of a row)]), and the rows' notes that mean "this section is empty".
SECTIONS: list[tuple[str, str | None, list[tuple[str, Callable[[Row], str]]]]] = [
    (
        "Epoch time and speedup",
        None,
        [
            ("epoch time", _epoch),
            ("repeats", lambda r: str(r.runs)),
            ("speedup", lambda r: "—" if r.speedup is None else f"{r.speedup:.2f}×"),
            ("efficiency", lambda r: _frac_pct(r.efficiency)),
            ("samples/s", lambda r: _num(0)(r.samples_per_s)),
            ("goodput", lambda r: percent(r.goodput, 0, fraction=True, missing="n/a")),
            ("speed of light", lambda r: _sol(r.speed_of_light)),
            ("step", lambda r: "—" if r.step_ms is None else f"{r.step_ms:.1f} ms"),
            ("batch / replica", lambda r: _num(0)(r.per_replica_batch)),
            (
                "first epoch",
                lambda r: "—" if r.first_epoch_s is None else f"{r.first_epoch_s:.2f} s",
            ),
        ],
    ),
    (
        "Cost",
        "no price",
        [
            ("instances", lambda r: str(r.instances) if r.instances else "—"),
            ("$/h", lambda r: "—" if r.usd_per_hour is None else f"{r.usd_per_hour:.2f}"),
            ("samples/$", lambda r: _num(0)(r.samples_per_dollar)),
            ("$/epoch", lambda r: "—" if r.usd_per_epoch is None else f"{r.usd_per_epoch:.5f}"),
        ],
    ),
    (
        "Accelerators and energy",
        "no GPU data",
        [
            ("GPU util", lambda r: _pct(r.gpu_util)),
            ("Wh/epoch", lambda r: _num(3)(r.energy_wh_per_epoch)),
            ("J/sample", lambda r: _num(4)(r.energy_j_per_sample)),
        ],
    ),
    (
        "Memory (peak of one process or device)",
        "no memory data",
        [
            ("host RSS peak", lambda r: _mb(r.host_peak_mb)),
            ("device peak", lambda r: _mb(r.device_peak_mb)),
            ("of the limit", lambda r: _frac_pct(r.memory_peak_fraction)),
        ],
    ),
    (
        "Computation vs other (share of step time)",
        "no trace data",
        [
            ("computation", lambda r: _pct(r.compute_percent)),
            ("communication", lambda r: _pct(r.communication_percent)),
            ("of it overlapped", lambda r: _frac_pct(r.communication_overlap)),
            ("exposed comm.", lambda r: _pct(r.exposed_communication_percent)),
            ("other", lambda r: _pct(r.other_percent)),
        ],
    ),
    (
        "Workers: who the others wait for",
        "no worker data",
        [
            (
                "straggler",
                lambda r: r.straggler or ("none" if r.straggler_share is not None else "—"),
            ),
            (
                "waited-for rank",
                lambda r: "—" if r.straggler_rank is None else str(r.straggler_rank),
            ),
            (
                "others wait",
                lambda r: (
                    "—" if r.straggler_wait_ms is None else f"{r.straggler_wait_ms:.1f} ms/step"
                ),
            ),
            ("of the step", lambda r: _frac_pct(r.straggler_share)),
            (
                "per epoch",
                lambda r: (
                    "—" if r.straggler_s_per_epoch is None else f"{r.straggler_s_per_epoch:.2f} s"
                ),
            ),
        ],
    ),
]
# Sections whose emptiness is read from the rows' values rather than from a note they carry.
EMPTY_WHEN: dict[str, Callable[[Row], bool]] = {
    "no worker data": lambda r: r.straggler_share is None
}


def render_table(table: ScalingTable, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(table.to_dict(), indent=2, sort_keys=True) + "\n"
    if fmt == "csv":
        return _csv(table)
    if fmt == "md":
        return _markdown(table)
    if fmt == "text":
        return _text(table)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def _csv(table: ScalingTable) -> str:
    names = [f.name for f in fields(Row) if f.name not in ("run_ids", "notes")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names + ["notes", "run_ids", "recommended", "projected"])
    measured = [r for r in table.recommendations if not r.projected]
    for row in table.rows:
        values = [getattr(row, n) for n in names]
        goals = " ".join(
            r.goal for r in measured if r.strategy == row.strategy and r.workers == row.workers
        )
        writer.writerow(
            ["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in values]
            + ["; ".join(row.notes), " ".join(row.run_ids), goals, "false"]
        )
    for rec in (r for r in table.recommendations if r.projected):
        projected: dict[str, object] = {
            "strategy": rec.strategy,
            "workers": rec.workers,
            "samples_per_s": "" if rec.value is None else f"{rec.value:.6g}",
        }
        writer.writerow(
            [projected.get(n, "") for n in names]
            + ["PROJECTION: " + "; ".join([rec.reason, *rec.assumptions]), "", "", "true"]
        )
    return out.getvalue()


GOALS = {
    "samples_per_s": "fastest (samples/s)",
    "samples_per_dollar": "cheapest (samples/$)",
    "energy": "least energy (J/sample)",
    "projection": "PROJECTION, not measured",
}


def advice_lines(table: ScalingTable, md: bool) -> list[str]:
    """The recommendations and the sweep's D6 findings, as lines of Markdown or plain text."""
    lines: list[str] = []
    if table.recommendations:
        lines += ["## Recommendations" if md else "Recommendations", ""]
        for rec in table.recommendations:
            lines += _recommendation(rec, md)
        lines.append("")
    if table.findings:
        lines += ["## D6 findings of the sweep" if md else "D6 findings of the sweep", ""]
        groups: dict[tuple[str, str, int], list[Any]] = {}
        for f in sorted(table.findings, key=lambda f: (f.code, f.strategy, f.workers, f.run_id)):
            groups.setdefault((f.code, f.strategy, f.workers), []).append(f)
        for (code, strategy, workers), found in groups.items():
            f = found[0]  # repeats of a configuration: the first run's message and evidence
            runs = f"{len(found)} runs" if len(found) > 1 else f.run_id
            evidence = ", ".join(f"{k}={_evidence(v)}" for k, v in f.evidence.items())
            head = f"{code} {f.name} ({f.severity}) on {strategy} ×{workers} [{runs}]"
            lines.append(f"- **{head}**: {f.message}" if md else f"  {head}: {f.message}")
            if evidence:
                lines.append(f"  - evidence: {evidence}" if md else f"    evidence: {evidence}")
        lines.append("")
    return lines


def _recommendation(rec: Recommendation, md: bool) -> list[str]:
    label = GOALS.get(rec.goal, rec.goal)
    what = f"{rec.strategy} ×{rec.workers}"
    lines = [f"- **{label}: {what}** — {rec.reason}" if md else f"  {label}: {what} — {rec.reason}"]
    if rec.findings:
        lines.append(("  - " if md else "    ") + f"its D6 findings: {', '.join(rec.findings)}")
    if rec.assumptions:
        lines.append(("  - " if md else "    ") + "assumptions:")
        lines += [("    - " if md else "      - ") + a for a in rec.assumptions]
    return lines


def _evidence(value: Any) -> str:
    return readable(value) if isinstance(value, float) else str(value)


def _visible(table: ScalingTable, empty_note: str | None) -> bool:
    if empty_note is None:
        return True
    empty = EMPTY_WHEN.get(empty_note, lambda r: empty_note in r.notes)
    return not all(empty(r) for r in table.rows)


def _markdown(table: ScalingTable) -> str:
    lines = [f"# Scaling report — {table.source}", ""]
    lines += advice_lines(table, md=True)
    for title, empty, cols in SECTIONS:
        lines.append(f"## {title}")
        lines.append("")
        if not _visible(table, empty):
            lines += [f"_{empty}_", ""]
            continue
        lines.append("| strategy | workers | " + " | ".join(h for h, _ in cols) + " |")
        lines.append("|---|---:|" + "---:|" * len(cols))
        for r in table.rows:
            lines.append(
                f"| {r.strategy} | {r.workers} | " + " | ".join(f(r) for _, f in cols) + " |"
            )
        lines.append("")
    lines += _failure_lines(table, md=True)
    if table.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in table.notes] + [""]
    return "\n".join(lines)


def _failure_lines(table: ScalingTable, md: bool) -> list[str]:
    if not table.failures:
        return []
    title = (
        "Failed configurations"
        if all(f.state == "failed" for f in table.failures)
        else "Failed or unfinished configurations"
    )
    lines = [f"## {title}" if md else title, ""]
    for f in table.failures:
        lines.append(
            f"{'- ' if md else '  '}{f.strategy} ×{f.workers} ({f.run_id}): {f.reason or 'failed'}"
        )
        if f.hint:
            lines.append(f"{'  ' if md else '    '}hint: {f.hint}")
    return lines + [""]


def _text(table: ScalingTable) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    # Plain text, never markup: "[sweep-…-n2-r0]" after a D6 finding is a run id, not a style tag.
    console = Console(file=buf, width=140, force_terminal=False, color_system=None, markup=False)
    console.print(f"Scaling report — {table.source}", highlight=False)
    if not table.rows:
        console.print("  no finished runs to compare", highlight=False)
    advice = advice_lines(table, md=False)
    if advice:
        console.print()
        console.print("\n".join(advice).rstrip(), highlight=False, soft_wrap=True)
    for title, empty, cols in SECTIONS:
        if not table.rows:
            break
        if not _visible(table, empty):
            console.print(f"\n{title}: {empty}", highlight=False)
            continue
        t = Table(title=title, title_justify="left", box=None, pad_edge=False)
        t.add_column("strategy")
        t.add_column("workers", justify="right")
        for header, _ in cols:
            t.add_column(header, justify="right")
        for r in table.rows:
            t.add_row(r.strategy, str(r.workers), *(f(r) for _, f in cols))
        console.print()
        console.print(t)
    text = buf.getvalue()
    tail = _failure_lines(table, md=False)
    if table.notes:
        tail += ["Notes"] + [f"  {n}" for n in table.notes] + [""]
    return text + ("\n" + "\n".join(tail) if tail else "")
