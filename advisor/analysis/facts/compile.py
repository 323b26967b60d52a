"""Compile events: the traces and compilations of the run (``compile`` records), by function and
cause, and the seconds they cost at start-up and mid-fit.

A *retrace* is a trace or compilation of a function already traced, for a reason in its inputs: a
new shape or dtype, a Python value or static argument, the partial last batch. A function object
created again (a ``tf.function`` defined inside the loop, a dataset rebuilt) is counted apart as
``compile.recreated``. The causes are grouped as the fixes are: ``value`` (Python values and static
arguments: pass them as tensors or arrays), ``shape`` (shapes, dtypes and the input's structure:
fixed or bucketed shapes, ``input_signature``, ``reduce_retracing``, ``dynamic=True``) and
``partial_batch`` (``drop_remainder``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run
    from advisor.store.schema import CompileEvent

NOT_RETRACES = frozenset({"first", "new_function", "graph_break"})
GROUPS = {
    "value": ("python_value", "static_argument"),
    "shape": ("shape", "structure", "dtype"),
    "partial_batch": ("partial_batch",),
}
GROUP_WORDS = {
    "value": "Python values or static arguments",
    "shape": "input shapes",
    "partial_batch": "the partial last batch",
}
CAUSE_WORDS = {
    "first": "first trace",
    "new_function": "the function was created again",
    "dtype": "a new dtype",
    "python_value": "a new Python value",
    "static_argument": "a new static argument",
    "partial_batch": "the partial last batch",
    "shape": "a new input shape",
    "structure": "a new input structure",
    "other": "a captured value or context changed",
    "unknown": "cause not known",
}


def _group_facts(group: str) -> tuple[Fact, ...]:
    words = GROUP_WORDS[group]
    return (
        Fact(f"compile.{group}.retraces", "", f"retraces caused by {words}", "compile"),
        Fact(f"compile.{group}.seconds", "s", f"seconds of retraces caused by {words}", "compile"),
        Fact(
            f"compile.{group}.share",
            "fraction",
            f"seconds of retraces caused by {words} ÷ the wall clock",
            "compile",
        ),
        Fact(
            f"compile.{group}.function",
            "",
            f"the function retraced most often for {words}",
            "compile",
            "str",
        ),
        Fact(
            f"compile.{group}.function_retraces",
            "",
            "how often that function was retraced for it",
            "compile",
        ),
        Fact(f"compile.{group}.detail", "", "what changed in its latest retrace", "compile", "str"),
    )


FACTS = (
    Fact("compile.backend", "", "the backend whose compile events were counted", "compile", "str"),
    Fact("compile.events", "", "traces and compilations during the run", "compile"),
    Fact("compile.seconds", "s", "seconds of all traces and compilations", "compile"),
    Fact("compile.startup_seconds", "s", "compile seconds before the first step's end", "compile"),
    Fact("compile.midfit_seconds", "s", "compile seconds after the first step", "compile"),
    Fact("compile.share", "fraction", "compile seconds ÷ the wall clock", "compile"),
    Fact("compile.midfit_share", "fraction", "mid-fit compile seconds ÷ the wall clock", "compile"),
    Fact(
        "compile.retraces",
        "",
        "traces or compilations of functions already traced, for a reason in their inputs",
        "compile",
    ),
    Fact("compile.retrace_seconds", "s", "seconds of those retraces", "compile"),
    Fact("compile.retrace_share", "fraction", "retrace seconds ÷ the wall clock", "compile"),
    Fact(
        "compile.recreated",
        "",
        "traces of a function object created again (same name and code)",
        "compile",
    ),
    Fact("compile.graph_breaks", "", "graph breaks (torch.compile)", "compile"),
    Fact("compile.graph_break_reasons", "", "graph-break reasons (×count)", "compile", "str"),
    Fact(
        "compile.functions",
        "",
        "every traced function: traces, retraces, seconds, causes",
        "compile",
        "list",
    ),
    Fact(
        "compile.top_function",
        "",
        "the function with the most retraces (else the most compile seconds)",
        "compile",
        "str",
    ),
    Fact("compile.top_count", "", "its traces or compilations", "compile"),
    Fact("compile.top_retraces", "", "its retraces", "compile"),
    Fact("compile.top_seconds", "s", "its compile seconds", "compile"),
    Fact("compile.top_cause", "", "the most common cause of its retraces", "compile", "str"),
    Fact("compile.top_detail", "", "what changed in its latest retrace", "compile", "str"),
) + tuple(f for group in GROUPS for f in _group_facts(group))


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import CompileRecord

    records = run.chief_of_type(CompileRecord)
    if not records:
        return {}
    events = _varying_batches([e for r in records for e in r.events])
    compiles = [e for e in events if e.kind != "graph_break"]
    breaks = [e for e in events if e.kind == "graph_break"]
    seconds = sum(e.seconds for e in compiles)
    startup = sum(e.seconds for e in compiles if e.phase == "startup")
    # a backward graph (torch) is compiled with its forward: its seconds count, not as a retrace
    retraces = [e for e in compiles if e.cause not in NOT_RETRACES and e.kind != "backward"]
    costs = [e for e in compiles if e.cause not in NOT_RETRACES]
    out: dict[str, Any] = {
        "compile.events": sum(1 for e in compiles if e.kind != "backward"),
        "compile.seconds": round(seconds, 4),
        "compile.startup_seconds": round(startup, 4),
        "compile.midfit_seconds": round(seconds - startup, 4),
        "compile.retraces": len(retraces),
        "compile.retrace_seconds": round(sum(e.seconds for e in costs), 4),
        "compile.recreated": sum(1 for e in compiles if e.cause == "new_function"),
        "compile.graph_breaks": sum(e.count for e in breaks),
    }
    if records[-1].backend:
        out["compile.backend"] = records[-1].backend
    if breaks:
        out["compile.graph_break_reasons"] = ", ".join(
            f"{e.detail} ×{e.count}" for e in sorted(breaks, key=lambda e: -e.count)[:3]
        )
    wall = facts.get("time.wall_seconds")
    if isinstance(wall, (int, float)) and wall > 0:
        out["compile.share"] = min(1.0, seconds / wall)
        out["compile.midfit_share"] = min(1.0, (seconds - startup) / wall)
        out["compile.retrace_share"] = min(1.0, out["compile.retrace_seconds"] / wall)
    table = _functions(compiles)
    out["compile.functions"] = table
    if table:
        top = table[0]
        out.update(
            {
                "compile.top_function": top["function"],
                "compile.top_count": top["count"],
                "compile.top_retraces": top["retraces"],
                "compile.top_seconds": top["seconds"],
            }
        )
        if top["cause"]:
            out["compile.top_cause"] = CAUSE_WORDS.get(top["cause"], top["cause"])
        if top["detail"]:
            out["compile.top_detail"] = top["detail"]
    for group, causes in GROUPS.items():
        out.update(_group(group, [e for e in costs if e.cause in causes], wall))
    return out


def _varying_batches(events: list[CompileEvent]) -> list[CompileEvent]:
    """A function retraced both for a smaller batch and for other shapes has a varying batch
    size, not a partial last batch: its partial-batch retraces count as shape retraces."""
    varying = {e.function for e in events if e.cause == "shape"}
    return [
        e.model_copy(update={"cause": "shape"})
        if e.cause == "partial_batch" and e.function in varying
        else e
        for e in events
    ]


def _functions(events: list[CompileEvent]) -> list[dict[str, Any]]:
    """One row per function, most retraces first (then most seconds)."""
    rows: dict[str, dict[str, Any]] = {}
    for e in events:
        row = rows.setdefault(
            e.function,
            {"function": e.function, "count": 0, "retraces": 0, "seconds": 0.0, "causes": {}},
        )
        row["seconds"] += e.seconds
        if e.kind == "backward":
            continue
        row["count"] += 1
        if e.cause not in NOT_RETRACES:
            row["retraces"] += 1
            row["causes"][e.cause] = row["causes"].get(e.cause, 0) + 1
            row["detail"] = e.detail
    out = []
    for row in rows.values():
        causes = row.pop("causes")
        row["cause"] = max(causes, key=lambda c: causes[c]) if causes else None
        ranked = sorted(causes.items(), key=lambda kv: -kv[1])
        row["causes"] = ", ".join(f"{CAUSE_WORDS.get(c, c)} ×{n}" for c, n in ranked)
        row["detail"] = row.get("detail", "")
        row["seconds"] = round(row["seconds"], 4)
        out.append(row)
    return sorted(out, key=lambda r: (-r["retraces"], -r["seconds"]))


def _group(group: str, events: list[CompileEvent], wall: Any) -> dict[str, Any]:
    seconds = sum(e.seconds for e in events)
    events = [e for e in events if e.kind != "backward"]
    out: dict[str, Any] = {
        f"compile.{group}.retraces": len(events),
        f"compile.{group}.seconds": round(seconds, 4),
    }
    if isinstance(wall, (int, float)) and wall > 0:
        out[f"compile.{group}.share"] = min(1.0, seconds / wall)
    if events:
        counts: dict[str, int] = {}
        for e in events:
            counts[e.function] = counts.get(e.function, 0) + 1
        worst = max(counts, key=lambda f: counts[f])
        out[f"compile.{group}.function"] = worst
        out[f"compile.{group}.function_retraces"] = counts[worst]
        latest = [e for e in events if e.function == worst][-1]
        if latest.detail:
            out[f"compile.{group}.detail"] = latest.detail
    return out
