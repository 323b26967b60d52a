"""The data check as text: object count, size distribution, compression, formats, and the
verdicts of the storage rules it can decide (S301, S305). Reads a plain summary dict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.diagnosis.report import Finding
from advisor.numbers import readable


def size(n: float | None) -> str:
    """Bytes as B / KB / MB / GB / TB (decimal, like S3's console)."""
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def _counted(counts: dict[str, int], of: int) -> str:
    return ", ".join(
        f"{k} ({v} of {of} sampled)" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])
    )


def render_data(summary: dict[str, Any], findings: Sequence[Finding] = ()) -> str:
    lines = [
        (
            f"{summary['location']}: {readable(summary['objects'])} objects, "
            f"{size(summary['total_bytes'])} "
            f"in total (checked in {summary.get('seconds', 0):.1f} s)"
        )
    ]
    if summary.get("truncated"):
        lines.append(
            f"  (stopped at {readable(summary['objects'])} objects: the statistics cover those)"
        )
    if summary["objects"]:
        lines.append(
            f"  size:        median {size(summary['bytes_p50'])}, p10 "
            f"{size(summary['bytes_p10'])}, "
            f"p90 {size(summary['bytes_p90'])} (smallest {size(summary['bytes_min'])}, "
            f"largest {size(summary['bytes_max'])})"
        )
    sniffed = int(summary.get("sniffed") or 0)
    if summary.get("compressions"):
        lines.append(f"  compression: {_counted(summary['compressions'], sniffed)}")
    lines.append(
        "  formats:     "
        f"{_counted(summary['formats'], sniffed) if summary.get('formats') else 'not recognised'}"
    )
    if summary.get("extensions"):
        ext = ", ".join(f"{k} {readable(v)}" for k, v in summary["extensions"].items())
        lines.append(f"  extensions:  {ext}")
    for problem in (summary.get("unreadable") or [])[:5]:
        lines.append(f"  unreadable:  {problem}")
    for finding in findings:
        if finding.status == "fail":
            lines.append(f"  {finding.code} fail: {finding.message}")
            if finding.fix:
                lines.append(f"        fix: {finding.fix}")
        elif finding.status == "pass":
            lines.append(f"  {finding.code} pass: {finding.message}")
        else:
            lines.append(f"  {finding.code} unknown: {finding.measure or finding.message}")
    return "\n".join(lines) + "\n"
