"""What the accelerators can do (an embedded table).

:data:`ACCELERATORS`: generation, bf16 / TF32 / FP8 support, dense peak FLOP/s per dtype (no
structured sparsity), memory, and where each figure comes from (vendor datasheets).

Cloud instance families (which GPU, interconnect and network each has) are in
:mod:`advisor.reference.families`.

Which instance a job runs on is found at train time by :mod:`advisor.probes.instance`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


# Dense peaks in TFLOP/s. Sparse figures in datasheets (marked *) are halved here. Boards of one
# chip share their peaks: A100 SXM4 and PCIe; H100 and H200 (SXM, NVL), which differ in memory.
_A100 = dict(fp64=9.7, fp32=19.5, tf32=156, bf16=312, fp16=312)
_HOPPER_SXM = dict(fp64=34, fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9)
_HOPPER_NVL = dict(fp64=30, fp32=60, tf32=417.5, bf16=835, fp16=835, fp8=1670)

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
        _acc("A100-SXM4", "ampere", 2020, 40, f"{_DS} A100 (SXM4)", **_A100),
        _acc("A100-PCIE", "ampere", 2020, 40, f"{_DS} A100 (PCIe)", **_A100),
        _acc("L4", "ada", 2023, 24, f"{_DS} L4", fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5),
        _acc(
            "L40S", "ada", 2023, 48, f"{_DS} L40S", fp32=91.6, tf32=183, bf16=362, fp16=362, fp8=733
        ),
        _acc(
            "L40", "ada", 2022, 48, f"{_DS} L40", fp32=90.5, tf32=90.5, bf16=181, fp16=181, fp8=362
        ),
        _acc("H100-SXM", "hopper", 2022, 80, f"{_DS} H100 (SXM5)", **_HOPPER_SXM),
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
        _acc("H100-NVL", "hopper", 2023, 94, f"{_DS} H100 NVL (per GPU)", **_HOPPER_NVL),
        _acc("H200-SXM", "hopper", 2024, 141, f"{_DS} H200 (SXM)", **_HOPPER_SXM),
        _acc("H200-NVL", "hopper", 2024, 141, f"{_DS} H200 NVL", **_HOPPER_NVL),
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
    """The table entry for an NVML name ("NVIDIA A100-SXM4-40GB") or a price-table name
    ("A100-40GB")."""
    if not name:
        return None
    upper = name.upper().replace("_", " ")
    for pattern, key in _NAME_PATTERNS:
        if re.search(pattern, upper):
            return ACCELERATORS[key]
    return None


def compute_dtype(policy: str | None, backend: str | None, acc: Accelerator) -> str:
    """The dtype whose peak applies: the policy's compute dtype, float32 as TF32 where TF/JAX use
    it."""
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
