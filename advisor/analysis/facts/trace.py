"""Profiler trace summaries (XProf, torch.profiler) as facts.

The summary of a run's profile is a JSON file beside the trace (see :mod:`advisor.traces.summarize`)
named by the run's latest ``trace`` record; ``facts`` records with ``source="trace"`` may also
carry ``trace.*`` values directly (e.g. from a profiler of another framework). Shares of step time
are percentages. Device-side facts are absent for CPU-only profiles, and step-based facts are
absent when the profile has no step markers (``trace.steps`` = 0).

Shares of step time from a handful of steps are not stable: on a busy machine one stalled step
moves them by tens of points. Below ``MIN_TRACE_STEPS`` steps found in the profile (the
evidence gate: 20 measured steps), the run's facts leave the step-time shares out and
``trace.withheld`` says why and what to capture instead, so the rules that need them are
unknown, not decided. ``advisor trace`` still prints what the summary measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.trace_summary import TraceSummary

FACTS = (
    Fact("trace.present", "", "a profile was captured and summarised", "trace", "bool"),
    Fact("trace.steps", "", "steps found in the profile", "trace"),
    Fact(
        "trace.steps_marked",
        "",
        "steps were marked in the capture (False with steps_per_execution > 1)",
        "trace",
        "bool",
    ),
    Fact("trace.step_time_ms.mean", "ms", "mean step time in the profile", "trace"),
    Fact("trace.step_time_ms.std", "ms", "standard deviation of step time in the profile", "trace"),
    Fact("trace.input_percent", "%", "share of step time waiting for input", "trace"),
    Fact(
        "trace.input_classification",
        "",
        "XProf's own verdict on the input (e.g. HOST, DEVICE, BOTH)",
        "trace",
        "str",
    ),
    Fact("trace.host_compute_percent", "%", "host compute share of step time", "trace"),
    Fact("trace.kernel_launch_percent", "%", "kernel-launch share of step time", "trace"),
    Fact(
        "trace.all_others_percent",
        "%",
        "'all others' share of step time (Python, host overhead)",
        "trace",
    ),
    Fact("trace.device_compute_percent", "%", "device compute share of step time", "trace"),
    Fact("trace.device_idle_percent", "%", "device idle share of step time", "trace"),
    Fact("trace.h2d_percent", "%", "host-to-device copy share of step time", "trace"),
    Fact("trace.d2h_percent", "%", "device-to-host copy share of step time", "trace"),
    Fact("trace.compute_16bit_percent", "%", "share of compute time in 16-bit ops", "trace"),
    Fact(
        "trace.eager_percent",
        "%",
        "share of step time spent executing ops eagerly (outside a compiled function)",
        "trace",
    ),
    Fact("trace.top_ops", "", "the ten ops with the most self time", "trace", "list"),
    Fact(
        "trace.top_ops_host", "", "host-side ops among the top ten (on an accelerator run)", "trace"
    ),
    Fact("trace.py_func", "", "PyFunc / EagerPyFunc ops ran during the steps", "trace", "bool"),
    Fact(
        "trace.communication_percent",
        "%",
        "collective / communication op share of step time",
        "trace",
    ),
    Fact(
        "trace.communication_overlap",
        "fraction",
        "share of communication time overlapped with compute",
        "trace",
    ),
    Fact(
        "trace.communication_at_end",
        "",
        "communication is bunched at the end of the step",
        "trace",
        "bool",
    ),
    Fact(
        "trace.hardware",
        "",
        "XProf's hardware type of the profile (CPU_ONLY, GPU, TPU)",
        "trace",
        "str",
    ),
    Fact(
        "trace.compile_percent", "%", "share of step time spent compiling (tracing, XLA)", "trace"
    ),
    Fact(
        "trace.top_ops_copies", "", "copy ops (host↔device, send/recv) among the top ten", "trace"
    ),
    # The steps a capture marked, and why its step-time shares are withheld (MIN_TRACE_STEPS).
    Fact(
        "trace.marked_steps",
        "",
        "step markers the capture opened (steps XProf can find at most)",
        "trace",
    ),
    Fact(
        "trace.withheld",
        "",
        "why the profile's step-time shares are not facts (too few steps) and what to capture",
        "trace",
        "str",
    ),
)

_NAMES = frozenset(f.name for f in FACTS)

MIN_TRACE_STEPS = 20  # steps found in a profile before its step-time shares are facts
SUGGESTED_WINDOW = (10, 34)  # marks 25 steps: XProf drops one or two cut by the capture's edges
# Shares of step time (and verdicts built on them) that need MIN_TRACE_STEPS steps.
STEP_SHARES = (
    "trace.input_percent",
    "trace.input_classification",
    "trace.host_compute_percent",
    "trace.kernel_launch_percent",
    "trace.all_others_percent",
    "trace.compile_percent",
    "trace.device_compute_percent",
    "trace.device_idle_percent",
    "trace.h2d_percent",
    "trace.d2h_percent",
    "trace.eager_percent",
    "trace.communication_percent",
    "trace.communication_overlap",
    "trace.communication_at_end",
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import FactsRecord, TraceRecord

    out: dict[str, Any] = {}
    records = run.of_type(TraceRecord)
    chosen = None
    for rank in run.ranks:  # the chief's (lowest rank's) latest summarised capture
        summarised = [r for r in run.of_type(TraceRecord, rank) if r.summary]
        if summarised:
            chosen = max(summarised, key=lambda r: r.t)
            break
    summary = (
        run.trace_summaries.get(chosen.summary) if chosen is not None and chosen.summary else None
    )
    if chosen is not None and summary is not None:
        out.update(summary_facts(summary))
        if chosen.steps_marked is not None:
            out["trace.steps_marked"] = chosen.steps_marked
        if chosen.marked_steps is not None:
            out["trace.marked_steps"] = chosen.marked_steps
        withhold_unstable_shares(out)
    elif records or run.manifest.config.get("profile_steps"):
        out["trace.present"] = False  # a capture was asked for or made, but no summary exists
        marked = [r.steps_marked for r in records if r.steps_marked is not None and r.error is None]
        if marked:
            out["trace.steps_marked"] = marked[-1]
    for record in run.of_type(FactsRecord):
        if record.source == "trace":
            out.update({k: v for k, v in record.values.items() if k in _NAMES and v is not None})
    return out


def summary_facts(summary: TraceSummary) -> dict[str, Any]:
    """The ``trace.*`` facts of one summary (absent where it measured nothing)."""
    out: dict[str, Any] = {
        "trace.present": True,
        "trace.steps": summary.steps,
        "trace.steps_marked": summary.steps > 0,
        "trace.hardware": summary.hardware,
    }
    pairs = {
        "trace.step_time_ms.mean": summary.step_time_ms_mean,
        "trace.step_time_ms.std": summary.step_time_ms_std,
        "trace.input_percent": summary.input_percent,
        "trace.input_classification": summary.input_classification,
        "trace.host_compute_percent": summary.host_compute_percent,
        "trace.kernel_launch_percent": summary.kernel_launch_percent,
        "trace.all_others_percent": summary.all_others_percent,
        "trace.device_compute_percent": summary.device_compute_percent,
        "trace.device_idle_percent": summary.device_idle_percent,
        "trace.h2d_percent": summary.h2d_percent,
        "trace.d2h_percent": summary.d2h_percent,
        "trace.compute_16bit_percent": summary.compute_16bit_percent,
        "trace.eager_percent": summary.eager_percent,
        "trace.compile_percent": summary.compile_percent,
        "trace.top_ops_host": summary.top_ops_host,
        "trace.top_ops_copies": summary.top_ops_copies if summary.top_ops else None,
        "trace.communication_percent": summary.communication_percent,
        "trace.communication_overlap": summary.communication_overlap,
        "trace.communication_at_end": summary.communication_at_end,
    }
    out.update(
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in pairs.items() if v is not None}
    )
    if summary.top_ops:
        out["trace.top_ops"] = [
            {
                "name": op.name,
                "type": op.type,
                "where": op.where,
                "self_percent": round(op.self_time_percent, 2),
            }
            for op in summary.top_ops
        ]
        out["trace.py_func"] = bool(summary.py_func_ops)
    return out


def withhold_unstable_shares(facts: dict[str, Any]) -> None:
    """Remove the step-time shares of a profile with fewer than MIN_TRACE_STEPS steps (but some)
    from ``facts`` and say why in ``trace.withheld``."""
    steps = facts.get("trace.steps")
    if not isinstance(steps, int) or steps <= 0 or steps >= MIN_TRACE_STEPS:
        return
    present = [name for name in STEP_SHARES if name in facts]
    if not present:
        return
    for name in present:
        del facts[name]
    start, stop = SUGGESTED_WINDOW
    facts["trace.withheld"] = (
        f"the profile has {steps} steps; its step-time shares need at least {MIN_TRACE_STEPS} to "
        f"be stable: capture a longer window, e.g. profile_steps=({start}, {stop})"
    )
