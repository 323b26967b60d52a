"""Accelerator and instance knowledge, MFU. Derivations: issue 6 (hardware)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.analysis.registry import Fact

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact("instance.type", "", "cloud instance type", "instance", "str"),
    Fact("instance.family", "", "instance family, e.g. p4d, g5, a2", "instance", "str"),
    Fact("instance.current_generation", "", "the instance family is of a current generation", "instance", "bool"),
    Fact("instance.vcpus_per_gpu", "", "vCPUs per accelerator on the instance", "instance"),
    Fact("instance.accelerated_networking", "", "the instance has EFA / FastSocket / GPUDirect-class networking", "instance", "bool"),
    Fact("instance.gpus", "", "accelerators per instance", "instance"),
    Fact("accelerator.model", "", "accelerator model, e.g. A100-SXM4-40GB", "hardware", "str"),
    Fact("accelerator.generation", "", "architecture generation, e.g. ampere, hopper", "hardware", "str"),
    Fact("accelerator.current_generation", "", "the accelerator is of a current generation", "hardware", "bool"),
    Fact("accelerator.bf16", "", "the accelerator computes bf16 natively", "hardware", "bool"),
    Fact("accelerator.peak_tflops", "TFLOP/s", "dense peak for the run's compute dtype", "hardware"),
    Fact("model.flops_per_sample", "FLOP", "training FLOPs per sample (forward + backward)", "hardware"),
    Fact("model.flops_method", "", "how the FLOPs were estimated (cost-analysis, op-count)", "hardware", "str"),
    Fact("mfu", "fraction", "model FLOPs utilization: achieved FLOP/s ÷ peak", "hardware"),
)


def derive(run: Run, facts: dict[str, Any]) -> dict[str, Any]:
    return {}
