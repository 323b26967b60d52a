"""Live prices: the Pricing API and spot history through botocore's Stubber, the disk cache, and
the fall-back to the embedded table. moto has no Pricing API, so these calls are stubbed at the
botocore boundary with responses shaped like real ones; the no-credentials case is a real client.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.stub import Stubber  # noqa: E402

from advisor.cloud import pricing  # noqa: E402
from advisor.cloud.price_cache import CachedPrice, PriceCache, cache_key  # noqa: E402
from advisor.errors import CloudError  # noqa: E402
from advisor.reference.prices import lookup, price_table, resolve  # noqa: E402


def price_item(instance: str, usd: str, usage: str | None = None, region: str = "us-east-1") -> str:
    """One PriceList entry as the Pricing API returns it (a JSON string)."""
    sku = "Q5KJSQ8D6YCWXG4R"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance,
                    "regionCode": region,
                    "location": "US East (N. Virginia)",
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "licenseModel": "No License required",
                    "vcpu": "4",
                    "gpu": "1",
                    "memory": "16 GiB",
                    "usagetype": usage or f"BoxUsage:{instance}",
                    "operation": "RunInstances",
                    "servicecode": "AmazonEC2",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "offerTermCode": "JRTCKXETXF",
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "appliesTo": [],
                                "description": (
                                    f"${usd} per On Demand Linux {instance} Instance Hour"
                                ),
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def stubbed(service: str, region: str = "us-east-1"):
    client = boto3.client(
        service, region_name=region, aws_access_key_id="x", aws_secret_access_key="y"
    )
    return client, Stubber(client)


def filters_for(instance: str, region: str) -> list[dict[str, str]]:
    fields = {"instanceType": instance, "regionCode": region, **pricing.EC2_FILTERS}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def test_on_demand_price_from_real_shaped_items(tmp_path):
    client, stub = stubbed("pricing")
    # Two products match loosely; the BoxUsage one is the shared-tenancy on-demand price.
    items = [
        price_item("g5.xlarge", "1.0060000000"),
        price_item("g5.xlarge", "0.0000000000", "HostUsage:g5"),
    ]
    stub.add_response(
        "get_products",
        {"PriceList": items, "FormatVersion": "aws_v1"},
        {
            "ServiceCode": "AmazonEC2",
            "Filters": filters_for("g5.xlarge", "us-east-1"),
            "MaxResults": 100,
        },
    )
    with stub:
        quote = pricing.live_quote(
            "g5.xlarge",
            "us-east-1",
            cache=PriceCache(tmp_path / "p.json"),
            clients={"pricing": client},
        )
    stub.assert_no_pending_responses()
    assert quote.usd_per_hour == pytest.approx(1.006)
    assert quote.source.startswith("aws-pricing-api:us-east-1:") and not quote.cached


def test_cached_price_is_used_until_it_expires(tmp_path):
    cache = PriceCache(tmp_path / "p.json")
    key = cache_key("on-demand", "eu-west-1", "g5.xlarge")
    now = time.time()
    cache.put(key, CachedPrice(1.123, "aws-pricing-api:eu-west-1:2026-11-30", now - 60, now + 3600))
    client, stub = stubbed("pricing")
    with stub:  # no response queued: a call would fail the test
        quote = pricing.live_quote(
            "g5.xlarge", "eu-west-1", cache=cache, clients={"pricing": client}
        )
    assert quote.cached and quote.usd_per_hour == 1.123

    cache.put(
        key,
        CachedPrice(1.123, "aws-pricing-api:eu-west-1:2026-11-01", now - 8 * 86400, now - 86400),
    )
    stub.add_response(
        "get_products",
        {"PriceList": [price_item("g5.xlarge", "1.2", region="eu-west-1")]},
        {
            "ServiceCode": "AmazonEC2",
            "Filters": filters_for("g5.xlarge", "eu-west-1"),
            "MaxResults": 100,
        },
    )
    with stub:
        fresh = pricing.live_quote(
            "g5.xlarge", "eu-west-1", cache=cache, clients={"pricing": client}
        )
    assert fresh.usd_per_hour == 1.2 and not fresh.cached
    stored = cache.get(key)
    assert stored is not None and stored.usd_per_hour == 1.2 and stored.fresh()
    assert stored.expires - stored.fetched == pytest.approx(7 * 86400)


def test_throttling_falls_back_to_a_stale_cache_then_raises_without_one(tmp_path):
    cache = PriceCache(tmp_path / "p.json")
    client, stub = stubbed("pricing")
    stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded", 400)
    with stub, pytest.raises(CloudError, match="throttling"):
        pricing.live_quote("g5.xlarge", "us-east-1", cache=cache, clients={"pricing": client})
    old = time.time() - 30 * 86400
    cache.put(
        cache_key("on-demand", "us-east-1", "g5.xlarge"),
        CachedPrice(0.99, "aws-pricing-api:us-east-1:2026-10-01", old, old + 7 * 86400),
    )
    stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded", 400)
    with stub:
        quote = pricing.live_quote(
            "g5.xlarge", "us-east-1", cache=cache, clients={"pricing": client}
        )
    assert quote.usd_per_hour == 0.99 and "throttling" in quote.note and "cached on" in quote.note


def test_spot_price_is_the_median_of_the_latest_price_per_zone(tmp_path):
    client, stub = stubbed("ec2")
    now = datetime.now(timezone.utc)
    rows = [
        ("us-east-1a", "0.40", now),
        ("us-east-1a", "0.90", now - timedelta(hours=2)),
        ("us-east-1b", "0.45", now),
        ("us-east-1c", "0.60", now),
    ]
    history = [
        {
            "AvailabilityZone": z,
            "InstanceType": "g5.xlarge",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": p,
            "Timestamp": t,
        }
        for z, p, t in rows
    ]
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": history})
    with stub:
        quote = pricing.live_quote(
            "g5.xlarge",
            "us-east-1",
            spot=True,
            cache=PriceCache(tmp_path / "p.json"),
            clients={"ec2": client},
        )
    assert quote.usd_per_hour == pytest.approx(
        0.45
    )  # median of 0.40, 0.45, 0.60 (the old 0.90 is not latest)
    assert quote.source.startswith("aws-spot-history:us-east-1:") and "3 zones" in quote.detail


def test_unpriced_instance_is_a_clear_error():
    with pytest.raises(CloudError, match="no on-demand Linux price for x9.mega"):
        pricing.pick_on_demand([], "x9.mega")


def test_no_credentials_gives_the_table_and_a_one_line_note(tmp_path, monkeypatch):
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    found = resolve("g5.xlarge", live=True, region="us-east-1")
    assert found.usd_per_hour == lookup("g5.xlarge").usd_per_hour
    assert found.source == f"table:{price_table()['date']}"
    assert "no AWS credentials" in found.note and "\n" not in found.note
    spot = resolve("g5.xlarge", live=True, region="us-east-1", spot=True)
    assert spot.usd_per_hour is None and "no spot prices" in spot.note


def test_table_never_prices_sagemaker_types_but_knows_their_hardware():
    found = resolve("ml.g5.xlarge")
    assert found.usd_per_hour is None and "SageMaker" in found.note
    assert lookup("ml.g5.xlarge").gpus == 1
    assert resolve("g5.xlarge", 2.0).source == "argument"


def test_price_command_offline_and_from_the_cache(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from advisor.cli.main import cli

    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    out = runner.invoke(cli, ["price", "g5.xlarge", "--offline"])
    assert out.exit_code == 0 and "table:" in out.output and "$1.006/h" in out.output
    now = time.time()
    PriceCache().put(
        cache_key("on-demand", "eu-west-1", "g5.xlarge"),
        CachedPrice(1.23, "aws-pricing-api:eu-west-1:2026-12-01", now, now + 3600),
    )
    out = runner.invoke(cli, ["price", "g5.xlarge", "--region", "eu-west-1", "--format", "json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert (
        payload["usd_per_hour"] == 1.23
        and payload["source"] == "aws-pricing-api:eu-west-1:2026-12-01"
    )
    missing = runner.invoke(cli, ["price", "nope.large", "--offline"])
    assert missing.exit_code == 2 and "no on-demand price known" in missing.output


@pytest.mark.slow
def test_callback_with_aws_pricing_offline_uses_the_table_and_records_why(
    tmp_path, monkeypatch, runs_dir
):
    import keras
    import numpy as np
    from aws_server import SENTINELS, free_port, point_at

    import advisor
    from advisor.store.schema import EventRecord

    point_at(monkeypatch, f"http://127.0.0.1:{free_port()}", tmp_path)  # AWS unreachable
    x, y = np.random.rand(256, 4).astype("float32"), np.random.rand(256, 1).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = advisor.AdvisorCallback(
        instance_type="g5.xlarge", pricing="aws", log_every_seconds=None, telemetry=False
    )
    started = time.monotonic()
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[callback], verbose=0)
    assert time.monotonic() - started < 60
    run = advisor.RunService(runs_dir).read(callback.writer.run_id)
    assert run.manifest.price_source == f"table:{price_table()['date']}"
    assert run.manifest.price_per_hour == lookup("g5.xlarge").usd_per_hour
    (event,) = [e for e in run.of_type(EventRecord) if e.source == "prices"]
    assert "cannot reach AWS" in event.message or "did not arrive" in event.message
    text = (run.path / "worker-0.jsonl").read_text() + (run.path / "run.json").read_text()
    assert not any(secret in text for secret in SENTINELS)


def test_aws_errors_stay_one_line():
    from botocore.exceptions import ClientError

    from advisor.cloud.aws import cloud_error

    html = ClientError(
        {
            "Error": {"Code": "500", "Message": "<!doctype html>\n<html>\n<h1>Internal</h1>"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        },
        "GetProducts",
    )
    assert (
        str(cloud_error(html, "price"))
        == "price: the service answered HTTP 500 (a server error); try again later"
    )
    long = ClientError(
        {"Error": {"Code": "ValidationException", "Message": "x" * 500 + "\nmore"}}, "Op"
    )
    message = str(cloud_error(long, "op"))
    assert "\n" not in message and len(message) < 220
