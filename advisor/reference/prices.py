"""Prices: the embedded on-demand table (instance type → USD/h, vCPUs, GPUs) and the one place a
run's price is resolved (:func:`resolve`): an explicit price, else the live AWS price when asked
for (:mod:`advisor.cloud.pricing`, imported only then), else the table — always with its source.
"""

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
    """Find an instance by ``type`` or ``provider/type`` (case-insensitive).

    A SageMaker type (``ml.g5.xlarge``) finds the EC2 row of the same hardware; its price is the
    EC2 price, not SageMaker's (:func:`resolve` never uses it as a SageMaker price).
    """
    if not instance_type:
        return None
    wanted = instance_type.strip().lower().removeprefix("ml.")
    for key, row in price_table()["instances"].items():
        provider, name = key.split("/", 1)
        if wanted in (key.lower(), name.lower()):
            return InstancePrice(
                provider,
                name,
                float(row["usd_per_hour"]),
                int(row["vcpus"]),
                int(row["gpus"]),
                str(row["gpu"]),
            )
    return None


@dataclass(frozen=True)
class PriceResolution:
    """A resolved price: USD/h and its source (None, None when unknown) and a note for people."""

    usd_per_hour: float | None
    source: str | None
    note: str | None = None
    detail: str | None = None  # how a live price was chosen (e.g. the median of several zones)


def resolve(
    instance_type: str | None,
    price_per_hour: float | None = None,
    *,
    live: bool = False,
    region: str | None = None,
    spot: bool = False,
    wait_s: float | None = None,
    refresh: bool = False,
) -> PriceResolution:
    """The price of a run: ``price_per_hour`` wins; with ``live``, the AWS price (cached on disk;
    ``wait_s`` bounds the wait inside training); else the embedded on-demand table.

    Offline, without credentials or without boto3, ``live`` falls back to the table with a one-line
    note. The table has no spot and no SageMaker prices: those are unknown without AWS.
    """
    if price_per_hour is not None:
        if price_per_hour <= 0:
            raise ValueError("price_per_hour must be positive")
        return PriceResolution(float(price_per_hour), "argument")
    if not instance_type:
        return PriceResolution(None, None)
    note = None
    if live:
        from advisor.errors import AdvisorError

        try:
            from advisor.cloud import pricing

            quote = (
                pricing.quote_within(wait_s, instance_type, region, spot)
                if wait_s is not None
                else pricing.live_quote(instance_type, region, spot, refresh=refresh)
            )
            return PriceResolution(quote.usd_per_hour, quote.source, quote.note, quote.detail)
        except AdvisorError as exc:
            note = str(exc)
    return _from_table(instance_type, spot, note)


def _from_table(instance_type: str, spot: bool, note: str | None) -> PriceResolution:
    prefix = f"{note}; " if note else ""
    if spot:
        return PriceResolution(
            None,
            None,
            f"{prefix}the embedded table has no spot prices: "
            "give price_per_hour or let the advisor ask AWS (pricing='aws')",
        )
    if instance_type.strip().lower().startswith("ml."):
        return PriceResolution(
            None,
            None,
            f"{prefix}{instance_type} is a SageMaker type, priced "
            "above EC2: give price_per_hour or let the advisor ask AWS (pricing='aws')",
        )
    row = lookup(instance_type)
    if row is None:
        return PriceResolution(
            None, None, note and f"{note}; {instance_type} is not in the embedded table"
        )
    source = f"table:{price_table()['date']}"
    return PriceResolution(
        row.usd_per_hour, source, note and f"{note}; using the embedded table ({source})"
    )


def samples_per_dollar(samples_per_s: float, usd_per_hour: float) -> float:
    """Samples per dollar = samples/s × 3600 ÷ USD/h."""
    return samples_per_s * 3600.0 / usd_per_hour
