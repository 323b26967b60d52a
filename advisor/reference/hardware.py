"""What the hardware can do: accelerators and cloud instance families (embedded tables).

* :data:`ACCELERATORS`: generation, bf16 / TF32 / FP8 support, dense peak FLOP/s per dtype (no
  structured sparsity), memory, and where each figure comes from (vendor datasheets).
* :data:`FAMILIES`: cloud instance families: generation, GPU, interconnect, accelerated
  networking (EFA, GPUDirect-TCPX, InfiniBand). vCPUs per GPU come from the price table.

Which instance a job runs on is found at train time by :mod:`advisor.probes.instance`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DS = "NVIDIA datasheet"


@dataclass(frozen=True)
class Accelerator:
    key: str
    generation: str  # kepler, volta, turing, ampere, ada, hopper, blackwell
    year: int
    memory_gb: float
    peak_tflops: dict[str, float]  # dense, per dtype: fp64, fp32, tf32, bf16, fp16, fp8
    source: str
    bf16: bool = False
    tf32: bool = False
    fp8: bool = False

    @property
    def current_generation(self) -> bool:
        """Ampere (2020) and later: bf16 and TF32 tensor cores, the baseline for training today."""
        return self.generation in CURRENT_GENERATIONS


CURRENT_GENERATIONS = ("ampere", "ada", "hopper", "blackwell")


def _acc(key: str, gen: str, year: int, mem: float, source: str, **peaks: float) -> Accelerator:
    return Accelerator(
        key,
        gen,
        year,
        mem,
        dict(peaks),
        source,
        bf16="bf16" in peaks,
        tf32="tf32" in peaks,
        fp8="fp8" in peaks,
    )


# Dense peaks in TFLOP/s. Sparse figures in datasheets (marked *) are halved here.
ACCELERATORS: dict[str, Accelerator] = {
    a.key: a
    for a in (
        _acc(
            "K80",
            "kepler",
            2014,
            12,
            f"{_DS} Tesla K80 (per GK210 GPU, boost clock; one board = 2 GPUs)",
            fp64=1.46,
            fp32=4.37,
            fp16=4.37,
        ),
        _acc(
            "V100-SXM2",
            "volta",
            2017,
            16,
            f"{_DS} Tesla V100 (SXM2)",
            fp64=7.8,
            fp32=15.7,
            fp16=125,
        ),
        _acc(
            "V100-PCIE",
            "volta",
            2017,
            16,
            f"{_DS} Tesla V100 (PCIe)",
            fp64=7.0,
            fp32=14.0,
            fp16=112,
        ),
        _acc("T4", "turing", 2018, 16, f"{_DS} T4 (mixed-precision FP16/FP32)", fp32=8.1, fp16=65),
        _acc("A10", "ampere", 2021, 24, f"{_DS} A10", fp32=31.2, tf32=62.5, bf16=125, fp16=125),
        _acc(
            "A10G",
            "ampere",
            2021,
            24,
            "no NVIDIA datasheet; AWS G5 figures as commonly cited (lower tensor clocks than A10)",
            fp32=31.2,
            tf32=35,
            bf16=70,
            fp16=70,
        ),
        _acc(
            "A100-SXM4",
            "ampere",
            2020,
            40,
            f"{_DS} A100 (SXM4)",
            fp64=9.7,
            fp32=19.5,
            tf32=156,
            bf16=312,
            fp16=312,
        ),
        _acc(
            "A100-PCIE",
            "ampere",
            2020,
            40,
            f"{_DS} A100 (PCIe)",
            fp64=9.7,
            fp32=19.5,
            tf32=156,
            bf16=312,
            fp16=312,
        ),
        _acc("L4", "ada", 2023, 24, f"{_DS} L4", fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5),
        _acc(
            "L40S", "ada", 2023, 48, f"{_DS} L40S", fp32=91.6, tf32=183, bf16=362, fp16=362, fp8=733
        ),
        _acc(
            "L40", "ada", 2022, 48, f"{_DS} L40", fp32=90.5, tf32=90.5, bf16=181, fp16=181, fp8=362
        ),
        _acc(
            "H100-SXM",
            "hopper",
            2022,
            80,
            f"{_DS} H100 (SXM5)",
            fp64=34,
            fp32=67,
            tf32=494.7,
            bf16=989.4,
            fp16=989.4,
            fp8=1978.9,
        ),
        _acc(
            "H100-PCIE",
            "hopper",
            2022,
            80,
            f"{_DS} H100 (PCIe)",
            fp64=26,
            fp32=51,
            tf32=378,
            bf16=756,
            fp16=756,
            fp8=1513,
        ),
        _acc(
            "H100-NVL",
            "hopper",
            2023,
            94,
            f"{_DS} H100 NVL (per GPU)",
            fp64=30,
            fp32=60,
            tf32=417.5,
            bf16=835,
            fp16=835,
            fp8=1670,
        ),
        _acc(
            "H200-SXM",
            "hopper",
            2024,
            141,
            f"{_DS} H200 (SXM)",
            fp64=34,
            fp32=67,
            tf32=494.7,
            bf16=989.4,
            fp16=989.4,
            fp8=1978.9,
        ),
        _acc(
            "H200-NVL",
            "hopper",
            2024,
            141,
            f"{_DS} H200 NVL",
            fp64=30,
            fp32=60,
            tf32=417.5,
            bf16=835,
            fp16=835,
            fp8=1670,
        ),
        _acc(
            "B200",
            "blackwell",
            2025,
            180,
            f"{_DS} HGX B200 (per GPU)",
            fp64=37,
            fp32=75,
            tf32=1100,
            bf16=2250,
            fp16=2250,
            fp8=4500,
        ),
    )
}

# (pattern over the NVML or price-table name, accelerator key); first match wins.
_NAME_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bK80\b", "K80"),
    (r"V100.*PCIE", "V100-PCIE"),
    (r"V100", "V100-SXM2"),
    (r"\bT4\b", "T4"),
    (r"\bA10G\b", "A10G"),
    (r"\bA10\b", "A10"),
    (r"A100.*PCIE", "A100-PCIE"),
    (r"A100", "A100-SXM4"),
    (r"\bL40S\b", "L40S"),
    (r"\bL40\b", "L40"),
    (r"\bL4\b", "L4"),
    (r"H100.*NVL", "H100-NVL"),
    (r"H100.*PCIE", "H100-PCIE"),
    (r"H100", "H100-SXM"),
    (r"H200.*NVL", "H200-NVL"),
    (r"H200", "H200-SXM"),
    (r"\bB200\b", "B200"),
)


def match_accelerator(name: str | None) -> Accelerator | None:
    """The table entry for an NVML name ("NVIDIA A100-SXM4-40GB") or a price-table name ("A100-40GB")."""
    if not name:
        return None
    upper = name.upper().replace("_", " ")
    for pattern, key in _NAME_PATTERNS:
        if re.search(pattern, upper):
            return ACCELERATORS[key]
    return None


def compute_dtype(policy: str | None, backend: str | None, acc: Accelerator) -> str:
    """The dtype whose peak applies: the policy's compute dtype, float32 as TF32 where TF/JAX use it."""
    p = (policy or "float32").lower()
    if "bfloat16" in p:
        return "bf16"
    if "float16" in p:
        return "fp16"
    if "float64" in p:
        return "fp64"
    # TensorFlow and JAX run float32 matmuls and convolutions on TF32 tensor cores by default
    # (Ampere and later); PyTorch does not unless asked.
    if acc.tf32 and (backend or "tensorflow") in ("tensorflow", "jax"):
        return "tf32"
    return "fp32"


def peak_tflops(acc: Accelerator, dtype: str) -> float | None:
    value = acc.peak_tflops.get(dtype)
    if value is None and dtype == "tf32":
        value = acc.peak_tflops.get("fp32")
    return value


# ---------------------------------------------------------------------------------------------
# Instance families


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

FAMILIES: dict[str, Family] = {
    f.family: f
    for f in (
        Family("p2", "aws", "K80", False, "PCIe", "up to 25 Gb/s ENA", False, source=_AWS),
        Family("p3", "aws", "V100-SXM2", False, "NVLink", "up to 25 Gb/s ENA", False, source=_AWS),
        Family("p3dn", "aws", "V100-SXM2", False, "NVLink", "100 Gb/s, EFA", True, source=_AWS),
        Family(
            "p4d",
            "aws",
            "A100-SXM4",
            True,
            "NVSwitch",
            "400 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "p4de",
            "aws",
            "A100-SXM4",
            True,
            "NVSwitch",
            "400 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "p5",
            "aws",
            "H100-SXM",
            True,
            "NVSwitch",
            "3200 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "p5e",
            "aws",
            "H200-SXM",
            True,
            "NVSwitch",
            "3200 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "p5en",
            "aws",
            "H200-SXM",
            True,
            "NVSwitch",
            "3200 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "p6-b200",
            "aws",
            "B200",
            True,
            "NVSwitch",
            "3200 Gb/s EFA, GPUDirect RDMA",
            True,
            source=_AWS,
        ),
        Family(
            "g4dn",
            "aws",
            "T4",
            False,
            "PCIe",
            "up to 100 Gb/s; EFA on the largest sizes",
            None,
            ("8xlarge", "12xlarge", "16xlarge", "metal"),
            _AWS,
        ),
        Family(
            "g5",
            "aws",
            "A10G",
            True,
            "PCIe",
            "up to 100 Gb/s; EFA on the largest sizes",
            None,
            ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
            _AWS,
        ),
        Family(
            "g6",
            "aws",
            "L4",
            True,
            "PCIe",
            "up to 100 Gb/s; EFA on the largest sizes",
            None,
            ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
            _AWS,
        ),
        Family(
            "g6e",
            "aws",
            "L40S",
            True,
            "PCIe",
            "up to 400 Gb/s; EFA on the largest sizes",
            None,
            ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
            _AWS,
        ),
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
    lower = name.lower().removeprefix(
        "ml."
    )  # a SageMaker type runs on the EC2 hardware of its name
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
