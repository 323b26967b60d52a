"""The human summary of one run (``advisor show``, the end of ``advisor demo``): rich renderables.

Plain data in, renderables out: it reads a run's overview and its derived facts, computes nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from advisor.numbers import percent, readable, strategy_label, workers_label

if TYPE_CHECKING:
    from advisor.analysis.overview import RunOverview


def fmt_number(value: Any, digits: int = 1) -> str:
    return readable(value, digits, compact=True)


# (heading, [(label, fact, format)]) — the headline facts of each area, in reading order.
SECTIONS: list[tuple[str, list[tuple[str, str, str]]]] = [
    (
        "Throughput",
        [
            ("samples/s", "throughput.samples_per_s", "num"),
            ("samples/s p10 · p50 · p90", "throughput.samples_per_s.p50", "pct3"),
            ("steps/s", "throughput.steps_per_s", "num"),
            ("stability (CV over windows)", "throughput.cv", "pct"),
            ("step time mean ± σ", "steps.time_ms.mean", "step"),
            ("step outliers (> mean + 3σ)", "steps.outliers", "num"),
            ("time to first step", "time.first_step_s", "s"),
            ("epoch time (mean, first epoch out)", "time.epoch_s.mean", "s"),
            ("first epoch", "time.first_epoch_s", "s"),
            ("validation share of epoch", "time.val_fraction", "pct"),
            ("fraction of speed of light", "speed_of_light.fraction", "sol"),
        ],
    ),
    (
        "Cost",
        [
            ("price", "cost.price_per_hour", "usd_h"),
            ("samples per dollar", "cost.samples_per_dollar", "num"),
            ("cost per epoch", "cost.usd_per_epoch", "usd"),
        ],
    ),
    (
        "Input",
        [
            ("real input samples/s", "baseline.real_samples_per_s", "num"),
            ("cached input samples/s (ceiling)", "baseline.cached_samples_per_s", "num"),
            ("data only samples/s", "baseline.data_only_samples_per_s", "num"),
            ("input share of step time", "input.bound_fraction", "band"),
            ("pipeline advice", "pipeline.advice", "changes"),
        ],
    ),
    (
        "Accelerator",
        [
            ("GPUs sampled", "gpu.count", "num"),
            ("utilization p5 · p50 · p95", "gpu.util.p50", "util3"),
            ("memory peak", "gpu.mem.peak_fraction", "mem"),
            ("load imbalance (JS distance)", "gpu.load_imbalance", "num3"),
            ("mean power", "gpu.power_w.mean", "w"),
            ("energy", "energy.wh", "wh"),
            ("energy per sample", "energy.j_per_sample", "j"),
            ("model FLOPs per sample", "model.flops_per_sample", "num"),
            ("MFU", "mfu", "mfu"),
            ("accelerator", "accelerator.model", "accel"),
        ],
    ),
    (
        "Host",
        [
            ("CPU mean", "host.cpu.mean", "pctv"),
            ("busiest core p95", "host.cpu.max_core_p95", "pctv"),
            ("samples with a core > 90%", "host.cpu.saturated_fraction", "pct"),
            ("iowait p95", "host.iowait.p95", "pctv"),
            ("memory peak", "host.mem.peak_fraction", "pct"),
            ("process memory", "memory.host.peak_bytes", "memory"),
        ],
    ),
    (
        "Profile",
        [
            ("steps in trace", "trace.steps", "num"),
            ("input share (trace)", "trace.input_percent", "pctv"),
            ("device idle", "trace.device_idle_percent", "pctv"),
            ("communication share", "trace.communication_percent", "pctv"),
        ],
    ),
]


def _fmt_pct3(value: Any, facts: dict[str, Any]) -> str | None:
    keys = (
        "throughput.samples_per_s.p10",
        "throughput.samples_per_s.p50",
        "throughput.samples_per_s.p90",
    )
    if not all(k in facts for k in keys):
        return None
    return " · ".join(fmt_number(facts[k]) for k in keys)


def _fmt_changes(value: Any, facts: dict[str, Any]) -> str | None:
    from advisor.diagnosis.phrases import say_changes

    if not isinstance(value, list):
        return None
    cost = facts.get("input.bound_fraction")
    if not value and isinstance(cost, (int, float)) and cost > 0:
        if facts.get("input.bound_outside_band"):
            # nothing in the graph to change, yet the input measurably costs time
            return (
                f"none found in the pipeline's graph, yet the input costs "
                f"{percent(float(cost), fraction=True)} of step time: see the findings"
            )
    return say_changes(value)


def _fmt_util3(value: Any, facts: dict[str, Any]) -> str | None:
    keys = ("gpu.util.p5", "gpu.util.p50", "gpu.util.p95")
    if not all(k in facts for k in keys):
        return None
    return " · ".join(percent(facts[k], 0) for k in keys)


def _fmt_step(value: Any, facts: dict[str, Any]) -> str | None:
    if value is None:
        return None
    return f"{value:.2f} ± {facts.get('steps.time_ms.std', 0.0):.2f} ms"


def _fmt_band(value: Any, facts: dict[str, Any]) -> str | None:
    """The baseline's input cost with its noise band and verdict."""
    if value is None:
        return None
    band, verdict = facts.get("input.bound_band"), facts.get("input.bound_verdict")
    rounds = facts.get("baseline.rounds")
    text = percent(float(value), fraction=True) + (
        f" ± {percent(float(band), fraction=True)}" if band is not None else ""
    )
    details = [str(v) for v in (verdict, f"{rounds} rounds" if rounds else None) if v]
    return text + (f" ({', '.join(details)})" if details else "")


# Kinds that read other facts beside their own (or none of their own).
_COMPOUND = {
    "pct3": _fmt_pct3,
    "changes": _fmt_changes,
    "util3": _fmt_util3,
    "step": _fmt_step,
    "band": _fmt_band,
}


def _fmt(kind: str, name: str, facts: dict[str, Any]) -> str | None:
    value = facts.get(name)
    if kind in _COMPOUND:
        return _COMPOUND[kind](value, facts)
    if value is None:
        return None
    return _fmt_value(kind, value, facts)


def _fmt_value(kind: str, value: Any, facts: dict[str, Any]) -> str:
    if kind == "num3":
        return f"{float(value):.3f}"
    if kind == "memory":
        return memory_line(float(value), facts)
    if kind == "mem":
        source = facts.get("gpu.mem.peak_source")
        return percent(float(value), fraction=True) + (f" ({source})" if source else "")
    if kind == "sol":  # measured on this host, unlike MFU's datasheet peak
        attainable, dtype = (
            facts.get("speed_of_light.attainable_tflops"),
            facts.get("speed_of_light.dtype"),
        )
        device = facts.get("speed_of_light.device") or "device"
        of = f" of {float(attainable):.3g} TFLOP/s" if attainable else ""
        return f"{percent(float(value), fraction=True)}{of} at {dtype} (this {device}, measured)"
    if kind == "mfu":
        method = facts.get("model.flops_method")
        return percent(float(value), fraction=True) + (f" (FLOPs by {method})" if method else "")
    if kind == "accel":
        source = facts.get("accelerator.source")
        return f"{value}" + (f" (from {source})" if source else "")
    if kind == "num":
        return fmt_number(value)
    if kind == "pct":
        return percent(float(value), fraction=True)
    if kind == "pctv":
        return percent(float(value))
    if kind == "s":
        return f"{float(value):.2f} s"
    if kind == "usd_h":
        source = facts.get("cost.price_source")
        return f"${float(value):.3f}/h" + (f" ({source})" if source else "")
    if kind == "usd":
        return f"${float(value):.4f}"
    if kind == "w":
        return f"{float(value):.0f} W"
    if kind == "wh":
        return f"{float(value):.2f} Wh"
    if kind == "j":
        return f"{float(value):.3f} J"
    return str(value)


def memory_line(peak_bytes: float, facts: dict[str, Any]) -> str:
    """Peak, then the growth per epoch and, for a leak, when memory runs out (docs/memory.md)."""
    text = f"peak {peak_bytes / 2**30:.2f} GB"
    rate, band = facts.get("memory.growth_mb_per_epoch"), facts.get("memory.growth_band_mb")
    if rate is None:
        return text
    growth = f"{float(rate):,.1f} ± {float(band or 0):,.1f} MB/epoch"
    if not facts.get("memory.growing"):
        return f"{text} · steady ({growth})"
    at = facts.get("memory.exhaustion_epoch")
    runs_out = f", runs out at epoch ~{float(at):,.0f}" if at is not None else ""
    return f"{text} · grows {growth}{runs_out}"


def header(view: RunOverview) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(view.created))
    status_style = {"finished": "green", "running": "cyan"}.get(view.status, "red")
    table.add_row("run", Text.assemble(f"{view.run_id}  ", (view.status, status_style)))
    table.add_row("created", created)
    framework = (
        f"Keras {view.keras_version or '?'} ({view.backend or '?'}"
        + (f" {view.backend_version}" if view.backend_version else "")
        + ")"
    )
    if view.legacy_keras:
        framework = f"tf_keras {view.keras_version or '?'}"
    elif view.custom_loop:
        framework = f"custom loop ({view.backend or '?'}" + (
            f" {view.backend_version})" if view.backend_version else ")"
        )
    table.add_row("framework", framework)
    processes = view.num_workers
    table.add_row(
        "strategy",
        f"{strategy_label(view.strategy, view.tags)} ×{workers_label(processes, view.tags)} · "
        f"{processes} process{'es' if processes != 1 else ''} · {view.replicas or 1} "
        f"replica{'s' if (view.replicas or 1) != 1 else ''}",
    )
    batch = fmt_number(view.global_batch_size)
    if view.per_replica_batch_size and view.per_replica_batch_size != view.global_batch_size:
        batch += f" (per replica {fmt_number(view.per_replica_batch_size)})"
    if (
        view.custom_loop
    ):  # a custom loop has no compile settings: its batch is all the advisor is told
        table.add_row("batch", batch)
    else:
        table.add_row("batch", f"{batch} · steps_per_execution {view.steps_per_execution or 1}")
        table.add_row(
            "precision · XLA", f"{view.dtype_policy or '?'} · jit_compile={view.jit_compile}"
        )
    if view.instance_type or view.price_per_hour:
        table.add_row("instance", f"{view.instance_type or '?'}")
    if view.tags:
        table.add_row(
            "tags", Text(", ".join(f"{k}={v}" for k, v in sorted(view.tags.items())))
        )  # text, not markup
    table.add_row("path", Text(view.path))
    return table


def facts_table(facts: dict[str, Any]) -> Table:
    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for heading, rows in SECTIONS:
        shown = [(label, _fmt(kind, name, facts)) for label, name, kind in rows]
        shown = [(label, text) for label, text in shown if text is not None]
        if heading == "Accelerator" and facts.get("gpu.present") is False:
            reason = facts.get("gpu.absent_reason") or "NVML not available on this host"
            shown = [("GPU", f"no GPU data ({reason})")] + shown
        if not shown:
            continue
        table.add_row(Text(heading, style="bold underline"), "")
        for label, text in shown:
            table.add_row(f"  {label}", text)
    return table


def epochs_table(view: RunOverview) -> Table | None:
    if not view.epochs:
        return None
    table = Table(title="Epochs", title_justify="left", show_edge=False)
    for col in ("epoch", "time", "train", "validation", "steps", "samples", "samples/s"):
        table.add_column(col, justify="right")
    for e in view.epochs:
        table.add_row(
            str(e.epoch),
            f"{e.seconds:.2f} s",
            f"{e.train_seconds:.2f} s",
            f"{e.val_seconds:.2f} s",
            fmt_number(e.steps),
            fmt_number(e.samples),
            fmt_number(e.samples_per_s),
        )
    return table


def events_table(view: RunOverview) -> Table | None:
    if not view.events:
        return None
    table = Table(title="Events", title_justify="left", show_edge=False)
    table.add_column("level")
    table.add_column("source")
    table.add_column("message")
    for e in view.events:
        table.add_row(e.level, e.source, e.message)
    return table


def run_summary(view: RunOverview, facts: dict[str, Any]) -> Group:
    from advisor.diagnosis.report import as_facts
    from advisor.render.goodput import goodput_parts
    from advisor.render.whatif import backends_parts, whatif_heading, whatif_table

    parts: list[Any] = [header(view), Text("")]
    budget = goodput_parts(facts)  # where the time went opens the summary
    if budget:
        parts += [*budget, Text("")]
    parts.append(facts_table(facts))
    report_facts = as_facts(facts)  # the what-if view reads a report's facts
    heading = whatif_heading(report_facts)
    if heading is not None:
        parts += [Text(""), Text(heading, style="bold")]
        table = whatif_table(report_facts, all_rows=True)
        if table is not None:
            parts.append(table)
    backends = backends_parts(report_facts)
    if backends:
        parts += [Text(""), *backends]
    for extra in (epochs_table(view), events_table(view)):
        if extra is not None:
            parts += [Text(""), extra]
    return Group(*parts)
