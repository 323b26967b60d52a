"""A trace summary as a few readable lines (``advisor trace``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.numbers import percent

if TYPE_CHECKING:
    from advisor.store.trace_summary import TraceSummary


def _pct(value: float | None) -> str:
    return percent(value, 1)


def render_text(s: TraceSummary, where: str) -> str:
    """The summary as a few readable lines."""
    lines = [f"Profile  {where}"]
    host = ", ".join(s.hosts) or "?"
    took = f", summarised in {s.seconds:.2f} s" if s.seconds is not None else ""
    extra = s.model_extra or {}
    if s.xprof_properties.get("profiler") == "horovod-timeline":
        lines.append(
            f"  Horovod timeline · {extra.get('horovod_tensors', '?')} tensors · shares of "
            f"{s.xprof_properties.get('basis', 'its span')}{took}"
        )
        if extra.get("horovod_negotiate_percent") is not None:
            lines.append(
                f"  negotiation (waiting for every rank) {_pct(extra['horovod_negotiate_percent'])}"
            )
        if extra.get("horovod_wire_dtypes"):
            lines.append(
                "  sent as "
                + ", ".join(f"{k} ×{v}" for k, v in sorted(extra["horovod_wire_dtypes"].items()))
            )
    else:
        lines.append(f"  hosts {host} · {s.hardware} · XProf {s.xprof_version or '?'}{took}")
    if s.steps:
        lines.append(
            f"  steps found {s.steps} · step time {s.step_time_ms_mean:.2f} ms ± "
            f"{s.step_time_ms_std:.2f}"
        )
        parts = [
            f"{name.replace('_', ' ')} {_pct(value)}"
            for name, value in sorted(s.breakdown_percent.items(), key=lambda kv: -kv[1])
            if value >= 0.05
        ]
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
            f"  device: compute {_pct(s.device_compute_percent)} · idle "
            f"{_pct(s.device_idle_percent)} · "
            f"H2D {_pct(s.h2d_percent)} · D2H {_pct(s.d2h_percent)} · 16-bit compute "
            f"{_pct(s.compute_16bit_percent)}"
        )
    if s.eager_percent is not None:
        lines.append(f"  eager op execution {_pct(s.eager_percent)} of step time")
    if s.communication_percent is not None:
        comm = f"  communication {_pct(s.communication_percent)} of step time"
        if s.collective_ops:
            overlap = (
                ""
                if s.communication_overlap is None
                else f", {percent(s.communication_overlap, 0, fraction=True)} overlapped"
            )
            end = {
                True: ", bunched at the end of the step",
                False: ", spread over the step",
                None: "",
            }[s.communication_at_end]
            comm += f" ({', '.join(s.collective_ops[:4])}{overlap}{end})"
        lines.append(comm)
    if s.top_ops:  # without an op table (e.g. JAX on CPU) py-funcs are unknown, not absent
        lines.append(f"  py_function ops: {', '.join(s.py_func_ops) if s.py_func_ops else 'none'}")
    if s.top_ops:
        lines.append("  top ops by self time (share of their side's time):")
        for i, op in enumerate(s.top_ops, 1):
            name = op.name if len(op.name) <= 70 else "…" + op.name[-69:]
            lines.append(
                f"    {i:2d}. {_pct(op.self_time_percent):>6}  {op.where:6s} {op.type:24.24s} "
                f"{name}"
            )
    for note in s.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
