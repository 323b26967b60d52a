"""Which findings read records the store's reader doubted: a finding whose evidence
comes from a kind of record that had lines skipped is marked, so a verdict on damaged data is
never shown as if the data were whole.

The reader says each problem as ``worker-0.jsonl:4: window record: …``; a problem that names no
record kind (a missing worker file, a doubtful manifest, a gap between windows) touches them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

# The facts each kind of record feeds (name prefixes).
FEEDS: dict[str, tuple[str, ...]] = {
    "window": ("throughput.", "steps.", "cost.samples_per_dollar", "time.epoch_start", "workers."),
    "epoch": ("time.", "run.", "cost.usd_per_epoch", "workers."),
    "first_step": ("time.first_step",),
    "gpu": ("gpu.", "energy.", "accelerator."),
    "host": ("host.", "pattern."),
    "baseline": ("input.", "baseline.", "callbacks.removed_speedup"),
    "whatif": ("whatif.",),
    "goodput": ("time.", "goodput", "callbacks.", "checkpoint."),
    "context": ("context.",),
    "pipeline": ("pipeline.", "storage."),
    "trace": ("trace.",),
    "facts": ("",),
}
_KIND = re.compile(r":\d+: (?P<kind>[a-z_]+) record: ")


def doubted_prefixes(problems: Iterable[str]) -> tuple[str, ...]:
    """The fact-name prefixes the problems touch; ``("",)`` (every fact) for a problem that names
    no kind of record; empty when there are none."""
    prefixes: dict[str, None] = {}
    for problem in problems:
        found = _KIND.search(problem)
        kind = found["kind"] if found else None
        if kind not in FEEDS:
            return ("",)
        prefixes.update(dict.fromkeys(FEEDS[kind]))
    return tuple(prefixes)


def mark(findings: Sequence[Any], problems: Sequence[str]) -> int:
    """Add a note to each decided finding whose evidence reads a doubted kind of record; returns
    how many were marked."""
    prefixes = doubted_prefixes(problems)
    if not prefixes:
        return 0
    note = (
        f"judged on data the reader doubted ({len(problems)} "
        f"problem{'s' if len(problems) != 1 else ''} with this run's records: see its problems); "
        "the verdict may change when the run is whole"
    )
    marked = 0
    for finding in findings:
        if finding.status not in ("fail", "pass") or not finding.evidence:
            continue
        if any(e.fact.startswith(prefixes) for e in finding.evidence):
            finding.note = f"{finding.note}; {note}" if finding.note else note
            marked += 1
    return marked
