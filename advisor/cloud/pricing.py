"""Live AWS prices: the Pricing API for on-demand, EC2 spot price history for spot, cached on disk.

On-demand: ``pricing.get_products`` for Linux, shared tenancy, no pre-installed software, in the
instance's region (EC2 types from ``AmazonEC2``, SageMaker ``ml.*`` types from ``AmazonSageMaker``
training usage). Spot: ``ec2.describe_spot_price_history`` now, the median of the latest price of
each availability zone. Each price carries its source, region and fetch date, e.g.
``aws-pricing-api:us-east-1:2026-12-01``. Failures are :class:`~advisor.errors.CloudError`
one-liners; :func:`advisor.reference.prices.resolve` turns them into the table and a note.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from advisor.cloud.aws import Budget, client, cloud_error, region_name
from advisor.cloud.price_cache import (
    ON_DEMAND_TTL_S,
    SPOT_TTL_S,
    CachedPrice,
    PriceCache,
    cache_key,
)
from advisor.errors import CloudError
from advisor.stats import median

PRICING_REGION = "us-east-1"  # the Pricing API answers in us-east-1, eu-central-1 and ap-south-1
EC2_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]


@dataclass(frozen=True)
class Quote:
    """One live price and where it came from."""

    instance_type: str
    region: str
    market: str  # "on-demand" | "spot"
    usd_per_hour: float
    source: str
    fetched: float
    detail: str | None = None
    cached: bool = False
    note: str | None = None  # e.g. an expired cache entry used because AWS did not answer


def is_sagemaker_type(instance_type: str) -> bool:
    return instance_type.lower().startswith("ml.")


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d")


def fetch_on_demand(instance_type: str, region: str, pricing_client: Any = None) -> Quote:
    """The on-demand USD/h of ``instance_type`` in ``region`` from the Pricing API."""
    sagemaker = is_sagemaker_type(instance_type)
    service = "AmazonSageMaker" if sagemaker else "AmazonEC2"
    fields = (
        {"instanceName": instance_type, "regionCode": region}
        if sagemaker
        else {"instanceType": instance_type, "regionCode": region, **EC2_FILTERS}
    )
    filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]
    what = f"price of {instance_type} in {region} (pricing:GetProducts)"
    pricing_client = pricing_client or client("pricing", PRICING_REGION)
    items: list[str] = []
    token: str | None = None
    try:
        for _ in range(10):  # a handful of pages at most (one product is expected)
            kwargs: dict[str, Any] = {"ServiceCode": service, "Filters": filters, "MaxResults": 100}
            if token:
                kwargs["NextToken"] = token
            page = pricing_client.get_products(**kwargs)
            items.extend(page.get("PriceList") or [])
            token = page.get("NextToken")
            if not token:
                break
    except Exception as exc:
        raise cloud_error(exc, what, "pricing:GetProducts") from None
    price, detail = pick_on_demand(items, instance_type, training=sagemaker)
    now = time.time()
    return Quote(
        instance_type,
        region,
        "on-demand",
        price,
        f"aws-pricing-api:{region}:{_day(now)}",
        now,
        detail,
    )


def pick_on_demand(
    items: list[Any], instance_type: str, training: bool = False
) -> tuple[float, str | None]:
    """The hourly USD price among Pricing API items (JSON strings); CloudError when there is
    none."""
    candidates: list[tuple[float, str]] = []
    for raw in items:
        try:
            item = json.loads(raw) if isinstance(raw, str) else raw
            attrs = item["product"]["attributes"]
            terms = item.get("terms", {}).get("OnDemand", {})
        except (KeyError, TypeError, ValueError):
            continue
        usage = str(attrs.get("usagetype", ""))
        if (
            training
            and "train" not in usage.lower()
            and str(attrs.get("component", "")).lower() != "training"
        ):
            continue
        for term in terms.values():
            for dim in (term.get("priceDimensions") or {}).values():
                if str(dim.get("unit", "")).lower() not in ("hrs", "hours", "hour"):
                    continue
                try:
                    usd = float((dim.get("pricePerUnit") or {}).get("USD", "nan"))
                except (TypeError, ValueError):
                    continue
                if usd > 0:
                    candidates.append((usd, usage))
    if not candidates:
        raise CloudError(f"the Pricing API lists no on-demand Linux price for {instance_type}")
    boxed = [c for c in candidates if "boxusage" in c[1].lower()] or candidates
    prices = sorted({round(p, 6) for p, _ in boxed})
    if len(prices) > 1:
        return prices[
            0
        ], f"{len(prices)} matching products, the lowest taken ({', '.join(map(str, prices[:4]))})"
    return prices[0], None


def fetch_spot(instance_type: str, region: str, ec2_client: Any = None) -> Quote:
    """The current spot USD/h: the median over zones of each zone's latest price."""
    if is_sagemaker_type(instance_type):
        raise CloudError(
            f"{instance_type}: SageMaker instances have no spot price history "
            "(managed spot training bills the EC2 spot price of the same type)"
        )
    what = f"spot price of {instance_type} in {region} (ec2:DescribeSpotPriceHistory)"
    ec2_client = ec2_client or client("ec2", region)
    latest: dict[str, tuple[datetime, float]] = {}
    try:
        kwargs: dict[str, Any] = {
            "InstanceTypes": [instance_type],
            "ProductDescriptions": SPOT_PRODUCTS,
            "StartTime": datetime.now(timezone.utc),
            "MaxResults": 100,
        }
        for _ in range(5):
            page = ec2_client.describe_spot_price_history(**kwargs)
            for row in page.get("SpotPriceHistory") or []:
                zone, stamp = row.get("AvailabilityZone", "?"), row.get("Timestamp")
                try:
                    usd = float(row["SpotPrice"])
                except (KeyError, TypeError, ValueError):
                    continue
                if zone not in latest or (stamp is not None and stamp > latest[zone][0]):
                    latest[zone] = (stamp or datetime.min.replace(tzinfo=timezone.utc), usd)
            token = page.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
    except Exception as exc:
        raise cloud_error(exc, what, "ec2:DescribeSpotPriceHistory") from None
    if not latest:
        raise CloudError(f"no spot price for {instance_type} in {region} (not offered there?)")
    prices = sorted((usd, zone) for zone, (_, usd) in latest.items())
    middle = median(p for p, _ in prices)
    if middle is None:
        raise CloudError(f"no finite spot price for {instance_type} in {region}")
    detail = f"median of {len(prices)} zones; lowest {prices[0][0]:g} in {prices[0][1]}"
    now = time.time()
    return Quote(
        instance_type, region, "spot", middle, f"aws-spot-history:{region}:{_day(now)}", now, detail
    )


def live_quote(
    instance_type: str,
    region: str | None = None,
    spot: bool = False,
    *,
    cache: PriceCache | None = None,
    budget: Budget = "command",
    refresh: bool = False,
    clients: dict[str, Any] | None = None,
) -> Quote:
    """A fresh cached price, else one from AWS (then cached), else a stale cached one with a note.

    Raises :class:`CloudError` when AWS cannot answer and nothing is cached.
    """
    region = region_name(region)
    market = "spot" if spot else "on-demand"
    cache = cache or PriceCache()
    key = cache_key(market, region, instance_type)
    cached = cache.get(key)
    if cached is not None and cached.fresh() and not refresh:
        return _from_cache(instance_type, region, market, cached)
    clients = clients or {}
    try:
        if spot:
            quote = fetch_spot(
                instance_type, region, clients.get("ec2") or client("ec2", region, budget)
            )
        else:
            quote = fetch_on_demand(
                instance_type,
                region,
                clients.get("pricing") or client("pricing", PRICING_REGION, budget),
            )
    except CloudError as exc:
        if cached is not None:
            stale = _from_cache(instance_type, region, market, cached)
            return Quote(
                **{
                    **stale.__dict__,
                    "note": f"{exc}; using the price cached on {_day(cached.fetched)}",
                }
            )
        raise
    ttl = SPOT_TTL_S if spot else ON_DEMAND_TTL_S
    cache.put(
        key,
        CachedPrice(
            quote.usd_per_hour, quote.source, quote.fetched, quote.fetched + ttl, quote.detail
        ),
    )
    return quote


def _from_cache(instance_type: str, region: str, market: str, cached: CachedPrice) -> Quote:
    return Quote(
        instance_type,
        region,
        market,
        cached.usd_per_hour,
        cached.source,
        cached.fetched,
        cached.detail,
        cached=True,
    )


def quote_within(
    seconds: float, instance_type: str, region: str | None = None, spot: bool = False
) -> Quote:
    """:func:`live_quote` with the training budget, given up after ``seconds`` (it may finish later
    in the background and fill the cache for the next run)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["quote"] = live_quote(instance_type, region, spot, budget="training")
        except BaseException as exc:  # reported to the caller, never raised on this thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="advisor-pricing", daemon=True)
    thread.start()
    thread.join(seconds)
    if "quote" in box:
        return box["quote"]  # type: ignore[no-any-return]
    if "error" in box:
        error = box["error"]
        raise (
            error
            if isinstance(error, CloudError)
            else CloudError(f"pricing: {type(error).__name__}: {error}")
        )
    raise CloudError(f"the AWS price of {instance_type} did not arrive within {seconds:g} s")
