"""Accelerator and instance knowledge, MFU; how each is measured: docs/telemetry.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import DeriveContext, Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("instance.type", "", "cloud instance type", "instance", "str"),
    Fact("instance.family", "", "instance family, e.g. p4d, g5, a2", "instance", "str"),
    Fact(
        "instance.current_generation",
        "",
        "the instance family is of a current generation",
        "instance",
        "bool",
    ),
    Fact("instance.vcpus_per_gpu", "", "vCPUs per accelerator on the instance", "instance"),
    Fact(
        "instance.accelerated_networking",
        "",
        "the instance has EFA / FastSocket / GPUDirect-class networking",
        "instance",
        "bool",
    ),
    Fact("instance.gpus", "", "accelerators per instance", "instance"),
    Fact("accelerator.model", "", "accelerator model, e.g. A100-SXM4-40GB", "hardware", "str"),
    Fact(
        "accelerator.generation",
        "",
        "architecture generation, e.g. ampere, hopper",
        "hardware",
        "str",
    ),
    Fact(
        "accelerator.current_generation",
        "",
        "the accelerator is of a current generation",
        "hardware",
        "bool",
    ),
    Fact("accelerator.bf16", "", "the accelerator computes bf16 natively", "hardware", "bool"),
    Fact(
        "accelerator.peak_tflops", "TFLOP/s", "dense peak for the run's compute dtype", "hardware"
    ),
    Fact(
        "model.flops_per_sample",
        "FLOP",
        "training FLOPs per sample (forward + backward)",
        "hardware",
    ),
    Fact(
        "model.flops_method",
        "",
        "how the FLOPs were estimated (cost-analysis, op-count)",
        "hardware",
        "str",
    ),
    Fact("mfu", "fraction", "model FLOPs utilization: achieved FLOP/s ÷ peak", "hardware"),
    Fact(
        "instance.source",
        "",
        "where the instance type came from: argument, env, dmi, metadata",
        "instance",
        "str",
    ),
    Fact(
        "instance.interconnect",
        "",
        "link between the GPUs of one instance (PCIe, NVLink, NVSwitch)",
        "instance",
        "str",
    ),
    Fact(
        "instance.network",
        "",
        "network between instances, as the provider describes it",
        "instance",
        "str",
    ),
    Fact(
        "accelerator.source",
        "",
        "nvml (the GPU seen at run time) or instance (the instance table)",
        "hardware",
        "str",
    ),
    Fact("accelerator.tf32", "", "the accelerator has TF32 tensor cores", "hardware", "bool"),
    Fact("accelerator.fp8", "", "the accelerator has FP8 tensor cores", "hardware", "bool"),
    Fact("accelerator.memory_gb", "GB", "memory of one accelerator (table)", "hardware"),
    Fact(
        "accelerator.peak_dtype",
        "",
        "the dtype whose peak MFU is measured against (bf16, fp16, tf32, fp32)",
        "hardware",
        "str",
    ),
    Fact("accelerator.peak_source", "", "where the peak figure comes from", "hardware", "str"),
    Fact("model.mfu_devices", "", "accelerators the achieved FLOP/s are divided over", "hardware"),
    Fact(
        "model.achieved_tflops",
        "TFLOP/s",
        "model FLOPs per second achieved by the whole job",
        "hardware",
    ),
)


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.reference.families import instance_info
    from advisor.reference.hardware import compute_dtype, match_accelerator, peak_tflops

    out: dict[str, Any] = {}
    m = run.manifest
    info = instance_info(m.instance_type) if m.instance_type else None
    if m.instance_type:
        out["instance.type"] = m.instance_type
        source = m.instance_source
        if source:
            out["instance.source"] = str(source)
    if info is not None:
        out["instance.family"] = info.family
        out["instance.current_generation"] = info.current_generation
        out["instance.vcpus_per_gpu"] = info.vcpus_per_gpu
        out["instance.accelerated_networking"] = info.accelerated_networking
        out["instance.gpus"] = info.gpus
        out["instance.interconnect"] = info.interconnect
        out["instance.network"] = info.network

    seen = [n for n in facts.get("gpu.models") or [] if n and n != "unknown"]
    acc = match_accelerator(seen[0]) if seen else None
    if acc is not None:
        out["accelerator.model"] = _clean(seen[0])
        out["accelerator.source"] = "nvml"
    elif info is not None and info.gpu:
        acc = match_accelerator(info.gpu)
        if acc is not None:
            out["accelerator.model"] = info.gpu
            out["accelerator.source"] = "instance"
    if acc is not None:
        dtype = compute_dtype(facts.get("context.dtype_policy"), facts.get("context.backend"), acc)
        out.update(
            {
                "accelerator.generation": acc.generation,
                "accelerator.current_generation": acc.current_generation,
                "accelerator.bf16": acc.bf16,
                "accelerator.tf32": acc.tf32,
                "accelerator.fp8": acc.fp8,
                "accelerator.memory_gb": acc.memory_gb,
                "accelerator.peak_dtype": dtype,
                "accelerator.peak_tflops": peak_tflops(acc, dtype),
                "accelerator.peak_source": acc.source,
            }
        )

    flops = _model_flops(run)
    if flops is not None:
        out["model.flops_per_sample"], out["model.flops_method"] = flops
    _mfu(facts, out)
    return {k: v for k, v in out.items() if v is not None}


def _clean(name: str) -> str:
    for prefix in ("NVIDIA ", "Tesla "):
        name = name.removeprefix(prefix)
    return name


def _model_flops(run: Run) -> tuple[float, str] | None:
    from advisor.store.schema import ContextRecord

    for rank in run.ranks:  # the chief first
        for record in reversed(run.of_type(ContextRecord, rank=rank)):
            value = record.values.get("model.flops_per_sample")
            if isinstance(value, (int, float)) and value > 0:
                return float(value), str(record.values.get("model.flops_method") or "unknown")
    return None


def _mfu(facts: dict[str, Any], out: dict[str, Any]) -> None:
    """MFU only for a GPU seen at run time: a table guess about an unseen device is no
    measurement."""
    flops = out.get("model.flops_per_sample")
    rate = facts.get("throughput.samples_per_s")
    peak = out.get("accelerator.peak_tflops")
    if not flops or not rate or not peak or out.get("accelerator.source") != "nvml":
        return
    replicas = facts.get("context.replicas")
    devices = (
        int(replicas)
        if isinstance(replicas, int) and replicas > 0
        else int(facts.get("gpu.count") or 1)
    )
    achieved = flops * rate
    out["model.achieved_tflops"] = achieved / 1e12
    out["model.mfu_devices"] = devices
    out["mfu"] = achieved / (peak * 1e12 * devices)
