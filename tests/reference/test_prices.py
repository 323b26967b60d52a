"""The embedded price table and samples per dollar."""

from __future__ import annotations

import pytest

from advisor.reference.prices import lookup, price_table, samples_per_dollar


def test_table_has_source_and_date_and_all_three_clouds():
    table = price_table()
    assert table["source"] and table["date"]
    providers = {key.split("/")[0] for key in table["instances"]}
    assert providers == {"aws", "gcp", "azure"}
    for row in table["instances"].values():
        assert row["usd_per_hour"] > 0 and row["vcpus"] > 0 and row["gpus"] > 0 and row["gpu"]


def test_lookup_by_name_or_provider_key():
    row = lookup("p4d.24xlarge")
    assert row is not None and row.gpus == 8 and row.vcpus_per_gpu == 12
    assert lookup("aws/p4d.24xlarge") == row
    assert lookup("AZURE/standard_nc6s_v3") is not None
    assert lookup("no-such-instance") is None


def test_samples_per_dollar_formula():
    assert samples_per_dollar(1000.0, 3.6) == pytest.approx(1_000_000.0)
