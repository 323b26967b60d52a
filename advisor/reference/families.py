"""Cloud instance families (an embedded table): generation, GPU, interconnect, accelerated
networking (EFA, GPUDirect-TCPX, InfiniBand). vCPUs per GPU come from the price table.

Which instance a job runs on is found at train time by :mod:`advisor.probes.instance`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    family: str
    provider: str
    gpu: str | None
    current_generation: bool
    interconnect: str  # between the GPUs of one instance
    network: str  # between instances
    accelerated_networking: bool | None  # None: depends on the size (see efa_sizes)
    efa_sizes: tuple[str, ...] = field(default=())
    source: str = ""


_AWS = "AWS EC2 instance type documentation (accelerated computing; EFA-supported types)"
_GCP = "Google Cloud GPU machine types documentation"
_AZ = "Azure GPU VM sizes documentation"

# The sizes of the AWS G families that have EFA.
_G_EFA_SIZES = ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")


def _aws_nvswitch(family: str, gpu: str, network: str) -> Family:
    """An AWS P family: current GPUs on NVSwitch, EFA with GPUDirect RDMA between instances."""
    return Family(
        family, "aws", gpu, True, "NVSwitch", f"{network} EFA, GPUDirect RDMA", True, source=_AWS
    )


def _aws_g(
    family: str, gpu: str, current: bool, network: str, efa_sizes: tuple[str, ...]
) -> Family:
    """An AWS G family: PCIe GPUs, EFA on the largest sizes only."""
    return Family(
        family,
        "aws",
        gpu,
        current,
        "PCIe",
        f"up to {network}; EFA on the largest sizes",
        None,
        efa_sizes,
        _AWS,
    )


FAMILIES: dict[str, Family] = {
    f.family: f
    for f in (
        Family("p2", "aws", "K80", False, "PCIe", "up to 25 Gb/s ENA", False, source=_AWS),
        Family("p3", "aws", "V100-SXM2", False, "NVLink", "up to 25 Gb/s ENA", False, source=_AWS),
        Family("p3dn", "aws", "V100-SXM2", False, "NVLink", "100 Gb/s, EFA", True, source=_AWS),
        _aws_nvswitch("p4d", "A100-SXM4", "400 Gb/s"),
        _aws_nvswitch("p4de", "A100-SXM4", "400 Gb/s"),
        _aws_nvswitch("p5", "H100-SXM", "3200 Gb/s"),
        _aws_nvswitch("p5e", "H200-SXM", "3200 Gb/s"),
        _aws_nvswitch("p5en", "H200-SXM", "3200 Gb/s"),
        _aws_nvswitch("p6-b200", "B200", "3200 Gb/s"),
        _aws_g("g4dn", "T4", False, "100 Gb/s", ("8xlarge", "12xlarge", "16xlarge", "metal")),
        _aws_g("g5", "A10G", True, "100 Gb/s", _G_EFA_SIZES),
        _aws_g("g6", "L4", True, "100 Gb/s", _G_EFA_SIZES),
        _aws_g("g6e", "L40S", True, "400 Gb/s", _G_EFA_SIZES),
        Family(
            "a2",
            "gcp",
            "A100-SXM4",
            True,
            "NVLink / NVSwitch",
            "up to 100 Gb/s",
            False,
            source=_GCP,
        ),
        Family(
            "a3", "gcp", "H100-SXM", True, "NVSwitch", "GPUDirect-TCPX / TCPXO", True, source=_GCP
        ),
        Family("g2", "gcp", "L4", True, "PCIe", "up to 100 Gb/s", False, source=_GCP),
        Family(
            "NCasT4_v3",
            "azure",
            "T4",
            False,
            "PCIe",
            "accelerated networking (no InfiniBand)",
            False,
            source=_AZ,
        ),
        Family(
            "NCv3",
            "azure",
            "V100-PCIE",
            False,
            "PCIe",
            "InfiniBand only on the 'r' sizes",
            False,
            source=_AZ,
        ),
        Family(
            "NC_A100_v4",
            "azure",
            "A100-PCIE",
            True,
            "PCIe / NVLink bridge",
            "accelerated networking (no InfiniBand)",
            False,
            source=_AZ,
        ),
        Family(
            "ND_A100_v4",
            "azure",
            "A100-SXM4",
            True,
            "NVSwitch",
            "200 Gb/s HDR InfiniBand per GPU",
            True,
            source=_AZ,
        ),
        Family(
            "ND_H100_v5",
            "azure",
            "H100-SXM",
            True,
            "NVSwitch",
            "400 Gb/s NDR InfiniBand per GPU",
            True,
            source=_AZ,
        ),
    )
}

_AZURE_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"^standard_nc\d+as_t4_v3$", "NCasT4_v3"),
    (r"^standard_nc\d+r?s_v3$", "NCv3"),
    (r"^standard_nc\d+ads_a100_v4$", "NC_A100_v4"),
    (r"^standard_nd\d+a?m?sr_(a100_)?v4$", "ND_A100_v4"),
    (r"^standard_nd\d+isr_h100_v5$", "ND_H100_v5"),
)


@dataclass(frozen=True)
class InstanceInfo:
    instance_type: str
    family: str | None
    provider: str | None
    current_generation: bool | None
    accelerated_networking: bool | None
    gpus: int | None
    vcpus_per_gpu: float | None
    gpu: str | None
    interconnect: str | None
    network: str | None


def family_of(instance_type: str) -> Family | None:
    name = instance_type.strip()
    if "/" in name:
        name = name.split("/", 1)[1]
    # a SageMaker type runs on the EC2 hardware of its name
    lower = name.lower().removeprefix("ml.")
    for pattern, fam in _AZURE_FAMILIES:
        if re.match(pattern, lower):
            return FAMILIES[fam]
    if "." in lower:  # AWS: family.size
        return FAMILIES.get(lower.split(".", 1)[0])
    if "-" in lower:  # GCP: a2-highgpu-1g
        return FAMILIES.get(lower.split("-", 1)[0])
    return None


def instance_info(instance_type: str | None) -> InstanceInfo | None:
    """What the tables know about an instance type (None when nothing)."""
    if not instance_type:
        return None
    from advisor.reference.prices import lookup

    fam = family_of(instance_type)
    row = lookup(instance_type)
    if fam is None and row is None:
        return None
    accel = fam.accelerated_networking if fam else None
    if fam is not None and accel is None:
        size = instance_type.lower().removeprefix("ml.").split(".", 1)[-1]
        accel = size in fam.efa_sizes
    gpus = row.gpus if row is not None else None
    return InstanceInfo(
        instance_type=instance_type,
        family=fam.family if fam else None,
        provider=fam.provider if fam else (row.provider if row else None),
        current_generation=fam.current_generation if fam else None,
        accelerated_networking=accel,
        gpus=gpus,
        vcpus_per_gpu=(row.vcpus / row.gpus) if row is not None and row.gpus else None,
        gpu=row.gpu if row is not None else (fam.gpu if fam else None),
        interconnect=fam.interconnect if fam else None,
        network=fam.network if fam else None,
    )
