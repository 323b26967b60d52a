"""``advisor trace PATH``: summarise a profile; ``--into RUN`` attaches it to a run.

PATH is a ``.xplane.pb`` file, a profile session folder, a TensorBoard log directory (the newest
session under it is read) or an advisor run (its own captures are summarised and recorded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from advisor.cli.common import runs_dir_option

if TYPE_CHECKING:
    from advisor.analysis.trace import TraceSummary


@click.command("trace")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--into", "into", metavar="RUN", default=None,
              help="Attach the profile to this run (id, prefix, path or 'latest') so `advisor check` uses it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=None,
              help="Seconds XProf's converter may take (default 120, or $ADVISOR_TRACE_TIMEOUT_S).")
@click.option("--memory-mb", type=click.IntRange(min=64), default=None,
              help="Memory limit of the converter process (default 8192, or $ADVISOR_TRACE_MEMORY_MB).")
@click.option("--force", is_flag=True, help="For a run: summarise again captures that already have a summary.")
@click.pass_context
def command(ctx: click.Context, path: Path, into: str | None, fmt: str, timeout_s: float | None,
            memory_mb: int | None, force: bool) -> None:
    """Summarise a TensorBoard / XProf profile (steps, input share, top ops, communication)."""
    from advisor.analysis.trace import summarize
    from advisor.analysis.trace_attach import attach, summarize_run
    from advisor.errors import TraceError
    from advisor.store.reader import resolve_run
    from advisor.store.schema import MANIFEST_NAME

    results: list[tuple[str, TraceSummary]] = []
    notes: list[str] = []
    if into is not None:
        run_path = resolve_run(into, runs_dir_option(ctx))
        record, summary = attach(path, run_path, timeout_s=timeout_s, memory_mb=memory_mb)
        results.append((str(run_path / record.path), summary))
        notes.append(f"attached to run {run_path.name} as {record.path}")
    elif path.is_dir() and (path / MANIFEST_NAME).is_file():
        done = summarize_run(path, force=force, timeout_s=timeout_s, memory_mb=memory_mb)
        if not done:
            from advisor.analysis.trace import load_summary
            from advisor.store.reader import RunReader
            from advisor.store.schema import TraceRecord

            run = RunReader(path).read()
            latest = {r.path: r for r in run.of_type(TraceRecord) if r.summary}
            for rec in latest.values():
                assert rec.summary is not None
                results.append((str(path / rec.path), load_summary(run.resolve(rec.summary))))
            notes.append("already summarised (use --force to summarise again)")
        for record, summary in done:
            results.append((str(path / record.path), summary))
            notes.append(f"recorded in run {path.name}")
    else:
        results.append((str(path), summarize(path, timeout_s=timeout_s, memory_mb=memory_mb)))
    if not results:
        raise TraceError(f"{path}: nothing to summarise")
    if fmt == "json":
        payload: Any = [dict(s.model_dump(mode="json"), path=p) for p, s in results]
        click.echo(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        for p, summary in results:
            click.echo(render_text(summary, p))
        for note in notes:
            click.echo(note, err=True)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def render_text(s: TraceSummary, where: str) -> str:
    """The summary as a few readable lines."""
    lines = [f"Profile  {where}"]
    host = ", ".join(s.hosts) or "?"
    took = f", summarised in {s.seconds:.2f} s" if s.seconds is not None else ""
    lines.append(f"  hosts {host} · {s.hardware} · XProf {s.xprof_version or '?'}{took}")
    if s.steps:
        lines.append(f"  steps found {s.steps} · step time {s.step_time_ms_mean:.2f} ms ± {s.step_time_ms_std:.2f}")
        parts = [f"{name.replace('_', ' ')} {value:.1f}%" for name, value in
                 sorted(s.breakdown_percent.items(), key=lambda kv: -kv[1]) if value >= 0.05]
        if parts:
            lines.append("  step time: " + " · ".join(parts))
    else:
        lines.append("  steps found 0 (no step markers: no step-time breakdown)")
    if s.input_statement:
        lines.append(f"  XProf: {s.input_statement}")
    if s.input_classification:
        lines.append(f"  input classification {s.input_classification}")
    if s.on_device:
        lines.append(
            f"  device: compute {_pct(s.device_compute_percent)} · idle {_pct(s.device_idle_percent)} · "
            f"H2D {_pct(s.h2d_percent)} · D2H {_pct(s.d2h_percent)} · 16-bit compute {_pct(s.compute_16bit_percent)}"
        )
    if s.eager_percent is not None:
        lines.append(f"  eager op execution {_pct(s.eager_percent)} of step time")
    if s.communication_percent is not None:
        comm = f"  communication {_pct(s.communication_percent)} of step time"
        if s.collective_ops:
            overlap = "" if s.communication_overlap is None else f", {100 * s.communication_overlap:.0f}% overlapped"
            end = {True: ", bunched at the end of the step", False: ", spread over the step", None: ""}[
                s.communication_at_end]
            comm += f" ({', '.join(s.collective_ops[:4])}{overlap}{end})"
        lines.append(comm)
    if s.top_ops:  # without an op table (e.g. JAX on CPU) py-funcs are unknown, not absent
        lines.append(f"  py_function ops: {', '.join(s.py_func_ops) if s.py_func_ops else 'none'}")
    if s.top_ops:
        lines.append("  top ops by self time (share of their side's time):")
        for i, op in enumerate(s.top_ops, 1):
            name = op.name if len(op.name) <= 70 else "…" + op.name[-69:]
            lines.append(f"    {i:2d}. {op.self_time_percent:5.1f}%  {op.where:6s} {op.type:24.24s} {name}")
    for note in s.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
