"""The measured what-if as a table (``advisor check`` and ``advisor show``): candidate,
samples/s, gain, band, what it cost; candidates that were not measured say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from advisor.diagnosis.measured_gains import speedup_text
from advisor.diagnosis.report import Facts, fact_value
from advisor.numbers import percent, readable

STATUS_WORDS = {
    "failed": "failed",
    "not_applicable": "does not apply",
    "not_relevant": "not tried",
    "skipped": "skipped",
}


def whatif_rows(facts: Facts) -> list[dict[str, Any]]:
    """The ``whatif.table`` fact's rows."""
    value = fact_value(facts, "whatif.table")
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def shared_host_note(facts: Facts) -> str | None:
    """What every measured gain of a run on a shared host carries (I250), or None: the CPU other
    processes used, and the share of the samples in which another process held the job's GPU."""
    said = []
    cpu = fact_value(facts, "host.shared_cpu_fraction")
    if isinstance(cpu, (int, float)):
        said.append(f"other processes used up to {percent(cpu, 0, fraction=True)} of its CPU")
    gpu = fact_value(facts, "gpu.shared_sample_fraction")
    if isinstance(gpu, (int, float)):
        said.append(
            f"{'another process' if said else 'other processes'} held its GPU in "
            f"{percent(gpu, 0, fraction=True)} of the samples"
        )
    return f"measured on a shared host: {' and '.join(said)} meanwhile (I250)" if said else None


def whatif_heading(facts: Facts) -> str | None:
    """The what-if's heading, e.g. ``Measured what-if: 4 changes tried in 19.4 s (allowance 20 s)
    beside 704 samples/s unchanged``."""
    skipped = fact_value(facts, "whatif.skipped")
    if skipped:
        return f"Measured what-if: skipped ({skipped})"
    rows = whatif_rows(facts)
    if not rows:
        return None
    measured = sum(1 for r in rows if r.get("speedup") is not None and not r.get("ceiling"))
    text = f"Measured what-if: {measured} change{'s' if measured != 1 else ''} measured"
    if any(r.get("speedup") is not None and r.get("ceiling") for r in rows):
        text += " and the input-removed ceiling"
    seconds = fact_value(facts, "whatif.seconds")
    allowance = fact_value(facts, "whatif.allowance_seconds")
    if isinstance(seconds, (int, float)):
        text += f" in {seconds:.1f} s" + (
            f" (allowance {round(allowance, 1):g} s)" if isinstance(allowance, (int, float)) else ""
        )
    unchanged = fact_value(facts, "whatif.unchanged_samples_per_s")
    if isinstance(unchanged, (int, float)):
        text += f", beside {readable(unchanged, 1, compact=True)} samples/s unchanged"
    if fact_value(facts, "whatif.interrupted"):
        text += "; interrupted by Ctrl-C"
    shared = shared_host_note(facts)
    return f"{text}; {shared}" if shared else text


def whatif_table(facts: Facts, *, all_rows: bool = False) -> Table | None:
    """Measured candidates first (largest gain first), then those that failed or were skipped;
    with ``all_rows`` also those that do not apply or were not tried."""
    rows = whatif_rows(facts)
    shown = [r for r in rows if all_rows or r.get("status") in ("measured", "failed", "skipped")]
    if not shown:
        return None
    table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
    for column, justify in (
        ("candidate", "left"),
        ("samples/s", "right"),
        ("gain", "right"),
        ("band", "right"),
        ("cost", "right"),
        ("change / note", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in shown:
        speed = row.get("speedup")
        band = row.get("band")
        rate = row.get("samples_per_s")
        seconds = row.get("seconds")
        if speed is not None:
            note = row.get("label") or ""
            if row.get("outside_band") is False and speed >= 1.0:
                note = "within noise: " + note
            if row.get("ceiling"):
                note = "ceiling, not a fix: " + note
        else:
            status = row.get("status", "")
            note = f"{STATUS_WORDS.get(status, status)}: {row.get('reason') or ''}"
        table.add_row(
            str(row.get("candidate")),
            readable(rate, 1, compact=True) if isinstance(rate, (int, float)) else "—",
            Text(
                speedup_text(float(speed)),
                style="bold" if speed >= 1.2 and not row.get("ceiling") else "",
            )
            if speed is not None
            else "—",
            f"±{percent(band, 0, fraction=True)}" if isinstance(band, (int, float)) else "—",
            f"{seconds:.1f} s" if isinstance(seconds, (int, float)) and seconds > 0 else "—",
            note,
        )
    return table


def backends_parts(facts: Facts) -> list[Text]:
    """The backend what-if (``backends.table``): a heading, then a line per candidate — its
    samples/s and speedup, or its status and whole reason; empty when the run has none."""
    rows = fact_value(facts, "backends.table")
    if not isinstance(rows, list) or not rows:
        return []
    rows = [r for r in rows if isinstance(r, dict)]
    measured = sum(1 for r in rows if r.get("samples_per_s"))
    seconds = fact_value(facts, "backends.seconds")
    took = f" in {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
    heading = f"Backend what-if: {measured} of {len(rows)} candidates measured{took}"
    parts = [Text(heading + ("" if measured else " — nothing measured"), style="bold")]
    for row in rows:
        name = str(row.get("candidate")) + (" (own)" if row.get("own") else "")
        rate, speed, band = row.get("samples_per_s"), row.get("speedup"), row.get("speedup_band")
        if isinstance(rate, (int, float)) and rate:
            text = f"{readable(rate, 1, compact=True)} samples/s"
            if isinstance(speed, (int, float)) and not row.get("own"):
                text += f", {speedup_text(float(speed))}"
                text += f" ±{percent(band, 0, fraction=True)}" if band is not None else ""
        else:
            status = str(row.get("status", ""))
            text = f"{STATUS_WORDS.get(status, status)}: {row.get('reason') or 'no reason given'}"
            blocked = (
                predicted(facts, str(row.get("backend") or "")) if status == "failed" else None
            )
            text += f" — {blocked}" if blocked else ""
        parts.append(Text(f"  {name}: {text}"))
    return parts + portability_parts(facts)


def predicted(facts: Facts, backend: str) -> str | None:
    """What the portability table says blocks ``backend``, in the user's terms: ``the table
    predicted it: ReluDense calls tf.nn.relu (layers.py:15), replace with keras.ops.relu``."""
    rows = fact_value(facts, "backends.portability")
    found = [
        (row.get("class"), b)
        for row in (rows if isinstance(rows, list) else [])
        if isinstance(row, dict)
        for b in row.get("blockers") or []
        if isinstance(b, dict) and backend in (b.get("blocks") or [])
    ]
    if not found:
        return None
    owner, first = found[0]
    text = f"the portability table predicted it: {owner} calls {first.get('call')} ("
    text += f"{Path(str(first.get('file'))).name}:{first.get('line')}"
    text += f", {first['via']})" if first.get("via") else ")"
    if first.get("replacement"):
        text += f", replace with {first['replacement']}"
    more = len(found) - 1
    return text + (f", and {more} more call{'s' if more > 1 else ''} (below)" if more else "")


def portability_parts(facts: Facts) -> list[Text]:
    """The portability table (``backends.portability``): per custom class, runs or blocked on
    each backend, and per blocking call its place, the backends it blocks and its replacement."""
    rows = fact_value(facts, "backends.portability")
    if not isinstance(rows, list) or not rows:
        return []
    parts = [Text("Portability of the model's own classes (read from their source):", style="bold")]
    for row in (r for r in rows if isinstance(r, dict)):
        states = row.get("backends") or {}
        line = row.get("line")
        where = f" ({Path(str(row.get('file'))).name}:{line})" if line else ""
        parts.append(
            Text(
                f"  {row.get('class')}{where}: " + ", ".join(f"{b} {s}" for b, s in states.items())
            )
        )
        if row.get("unread"):
            parts.append(Text(f"    not read: {row['unread']}"))
        for b in (b for b in row.get("blockers") or [] if isinstance(b, dict)):
            parts.append(Text("    " + _blocker(b)))
    return parts


def _blocker(b: dict[str, Any]) -> str:
    where = f"{Path(str(b.get('file'))).name}:{b.get('line')} {b.get('method')}: {b.get('call')}"
    where += f" ({b['via']})" if b.get("via") else ""
    blocks = b.get("blocks") or []
    if not blocks:
        return f"{where} (note: {b.get('advice')})"
    text = f"{where} blocks {', '.join(blocks)}"
    if b.get("replacement"):
        return f"{text}; replace with {b['replacement']}"
    return f"{text}; no keras.ops replacement" + (f" ({b['advice']})" if b.get("advice") else "")
