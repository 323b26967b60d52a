"""`advisor check` and `advisor show` present the measured what-if (no training: a written run)."""

from __future__ import annotations

import json

import jsonschema
from click.testing import CliRunner
from whatif_fixtures import input_bound_run, whatif_record

from advisor.cli.main import cli
from advisor.diagnosis.report import json_schema


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.output


def _row(text: str, candidate: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(candidate + " "))


def test_check_shows_the_measured_gain_on_the_finding_and_the_table(tmp_path):
    run = input_bound_run(tmp_path)
    text = _run(["check", str(run), "--no-color"])
    assert "measured: 40× (±0%) in 4.2 s — cache_map: ds.cache() after map #1 ('decode')" in text
    assert "measured: 2.4× (±0%) in 3.1 s — parallel_map" in text
    assert (
        "Measured what-if: 3 changes measured in 12.5 s (allowance 20 s), "
        "beside 100.0 samples/s unchanged" in text
    )
    header = next(line for line in text.splitlines() if "samples/s" in line and "candidate" in line)
    assert header.split()[:5] == ["candidate", "samples/s", "gain", "band", "cost"]
    assert _row(text, "cache_map").split()[1:5] == ["4,000.0", "40×", "±0%", "4.2"]
    assert _row(text, "prefetch").split()[1:3] == ["100.0", "1.00×"]
    assert "within noise" in _row(text, "prefetch")
    assert "failed: ResourceExhaustedError: out of memory" in _row(text, "batch_x2")
    assert "jit_compile" not in [
        line.split()[0] for line in text.splitlines() if line.strip()
    ]  # not tried: only in show


def test_show_lists_every_candidate_with_its_reason(tmp_path):
    run = input_bound_run(tmp_path)
    text = _run(["show", str(run)])
    assert "Measured what-if: 3 changes measured" in text
    assert "not tried: the input costs 98% of step time" in _row(text, "jit_compile")
    assert _row(text, "parallel_map").split()[1:3] == ["240.0", "2.4×"]


def test_json_export_carries_the_measurement_and_validates(tmp_path):
    run = input_bound_run(tmp_path)
    report = json.loads(_run(["check", str(run), "--format", "json"]))
    jsonschema.validate(report, json_schema())
    c402 = next(f for f in report["findings"] if f["code"] == "C402")
    assert c402["measured"]["candidate"] == "cache_map" and c402["measured"]["text"].startswith(
        "measured: 40×"
    )
    table = report["facts"]["whatif.table"]["value"]
    assert table[0]["candidate"] == "cache_map" and table[0]["speedup"] == 40.0


def test_a_skipped_whatif_is_one_line(tmp_path):
    record = whatif_record(
        candidates=[],
        unchanged_rounds=None,
        rounds=None,
        skipped="2 workers: every worker would have to try each change in lockstep",
    )
    text = _run(["check", str(input_bound_run(tmp_path, record)), "--no-color"])
    assert (
        "Measured what-if: skipped "
        "(2 workers: every worker would have to try each change in lockstep)" in text
    )
    assert "measured:" not in text


def test_the_heading_rounds_an_allowance_the_fit_derived():
    """A default allowance is 10% of the fit (6.0675 s of a 60.675 s fit): rounded to 0.1 s."""
    from advisor.diagnosis.report import as_facts
    from advisor.render.whatif import whatif_heading

    facts = {
        "whatif.seconds": 4.93,
        "whatif.allowance_seconds": 6.0675,
        "whatif.unchanged_samples_per_s": 735.9,
        "whatif.table": [{"candidate": "cache_map", "speedup": 53.2, "samples_per_s": 39134.0}],
    }
    heading = whatif_heading(as_facts(facts))
    assert heading is not None and "in 4.9 s (allowance 6.1 s)" in heading, heading
