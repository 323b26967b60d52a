"""Facts of the memory what-if (``batch_memory=True``): peak memory against batch size, the
largest batch that fits, and how far its check agreed; docs/memory.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

MB = 1024.0 * 1024.0

FACTS = (
    Fact(
        "memory.batch.largest",
        "",
        "the largest batch whose predicted peak stays under the memory limit less the margin",
        "batch_memory",
    ),
    Fact(
        "memory.batch.factor",
        "",
        "the largest batch that fits ÷ the fit's batch",
        "batch_memory",
    ),
    Fact(
        "memory.batch.where", "", "device or host: whose memory was measured", "batch_memory", "str"
    ),
    Fact("memory.batch.margin", "fraction", "the share of the limit left free", "batch_memory"),
    Fact("memory.batch.per_sample_mb", "MB", "peak memory per sample of batch", "batch_memory"),
    Fact(
        "memory.batch.fixed_mb",
        "MB",
        "peak memory at a batch of zero (the line's intercept)",
        "batch_memory",
    ),
    Fact(
        "memory.batch.limit_bytes",
        "bytes",
        "the limit the largest batch is sized for",
        "batch_memory",
    ),
    Fact(
        "memory.batch.points",
        "",
        "the measured (batch, peak MB) pairs",
        "batch_memory",
        "list",
    ),
    Fact("memory.batch.check_batch", "", "the batch the prediction was checked at", "batch_memory"),
    Fact(
        "memory.batch.check_error",
        "fraction",
        "(measured − predicted) ÷ predicted peak at the checked batch",
        "batch_memory",
    ),
    Fact(
        "memory.batch.error", "", "why the memory what-if measured nothing", "batch_memory", "str"
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import ContextRecord

    values: dict[str, Any] | None = None
    for record in run.of_type(ContextRecord):
        if isinstance(record.values.get("memory.batch"), dict):
            values = record.values["memory.batch"]
    if values is None:
        return {}
    out: dict[str, Any] = {}
    if values.get("error"):
        out["memory.batch.error"] = str(values["error"])
    points = [p for p in values.get("points") or [] if isinstance(p, dict)]
    if points:
        out["memory.batch.points"] = [[p["batch"], round(p["peak_bytes"] / MB, 1)] for p in points]
    for key, name, scale in (
        ("per_sample_bytes", "memory.batch.per_sample_mb", MB),
        ("fixed_bytes", "memory.batch.fixed_mb", MB),
        ("limit_bytes", "memory.batch.limit_bytes", 1.0),
        ("margin", "memory.batch.margin", 1.0),
    ):
        if values.get(key) is not None:
            out[name] = values[key] / scale
    if values.get("where"):
        out["memory.batch.where"] = values["where"]
    largest, batch = values.get("largest_batch"), values.get("batch_size")
    if largest:
        out["memory.batch.largest"] = int(largest)
        if batch:
            out["memory.batch.factor"] = largest / batch
    predicted, measured = values.get("check_predicted_bytes"), values.get("check_measured_bytes")
    if values.get("check_batch") and predicted and measured:
        out["memory.batch.check_batch"] = int(values["check_batch"])
        out["memory.batch.check_error"] = (measured - predicted) / predicted
    return out
