"""The embedded on-demand price table: instance type → USD/h, vCPUs, GPU count and model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class InstancePrice:
    provider: str
    instance_type: str
    usd_per_hour: float
    vcpus: int
    gpus: int
    gpu: str

    @property
    def vcpus_per_gpu(self) -> float:
        return self.vcpus / self.gpus if self.gpus else float(self.vcpus)


@lru_cache(maxsize=1)
def price_table() -> dict[str, Any]:
    text = resources.files("advisor.reference").joinpath("prices.json").read_text(encoding="utf-8")
    return json.loads(text)


def lookup(instance_type: str | None) -> InstancePrice | None:
    """Find an instance by ``type`` or ``provider/type`` (case-insensitive)."""
    if not instance_type:
        return None
    wanted = instance_type.strip().lower()
    for key, row in price_table()["instances"].items():
        provider, name = key.split("/", 1)
        if wanted in (key.lower(), name.lower()):
            return InstancePrice(provider, name, float(row["usd_per_hour"]), int(row["vcpus"]),
                                 int(row["gpus"]), str(row["gpu"]))
    return None


def resolve_price(instance_type: str | None, price_per_hour: float | None) -> tuple[float | None, str | None]:
    """(USD/h, source): an explicit price wins; else the table; else unknown."""
    if price_per_hour is not None:
        if price_per_hour <= 0:
            raise ValueError("price_per_hour must be positive")
        return float(price_per_hour), "argument"
    row = lookup(instance_type)
    if row is not None:
        return row.usd_per_hour, f"table:{price_table()['date']}"
    return None, None


def samples_per_dollar(samples_per_s: float, usd_per_hour: float) -> float:
    """Samples per dollar = samples/s × 3600 ÷ USD/h."""
    return samples_per_s * 3600.0 / usd_per_hour
