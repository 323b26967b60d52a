"""Renderers: one per output format, each turning :class:`~advisor.diagnosis.report.Report`
objects into text. Nothing is analysed here, and nothing here analyses.

    render(report, "text")        # rich text, colour only when asked (a TTY)
    render(report, "json")        # the versioned report (validates against `advisor schema`)
    render(report, "sarif")       # SARIF 2.1.0 for code-scanning tools
    render(report, "github")      # GitHub Actions workflow commands (annotations)
    render(report, "junit")       # JUnit XML: one test case per rule
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.diagnosis.report import Report

FORMATS: tuple[str, ...] = ("text", "json", "sarif", "github", "junit")
_MODULES = {
    "text": "advisor.render.text",
    "json": "advisor.render.jsonfmt",
    "sarif": "advisor.render.sarif",
    "github": "advisor.render.github",
    "junit": "advisor.render.junit",
}


def _module(fmt: str) -> Any:
    if fmt not in _MODULES:
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return importlib.import_module(_MODULES[fmt])


def render(report: Report, fmt: str = "text", **options: Any) -> str:
    """One report in one format. Options: ``color`` and ``width`` (text), ``fail_on`` (junit)."""
    return render_many([report], fmt, **options)


def render_many(reports: Sequence[Report], fmt: str = "text", **options: Any) -> str:
    """Several reports (e.g. every run in a store) in one document of the format."""
    text: str = _module(fmt).render_many(list(reports), **options)
    return text
