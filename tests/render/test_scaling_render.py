"""Renderers and plots of the scaling table: formats parse back, plots are real images."""

from __future__ import annotations

import csv
import io
import json
import struct

import pytest
from click.testing import CliRunner
from scaling_fixtures import write_sweep_runs

from advisor.analysis.scaling import Point, build_table
from advisor.render.plots import (
    computation_figure,
    efficiency_figure,
    epoch_time_figure,
    speedup_figure,
    write_plots,
)
from advisor.render.scaling import render_table
from advisor.service import RunService


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("render") / "runs"
    write_sweep_runs(root)
    return root


@pytest.fixture(scope="module")
def table(runs):
    return RunService(runs).scaling_table("sweep-fixture")


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_json_round_trip(table):
    data = json.loads(render_table(table, "json"))
    assert data["schema_version"] == 1
    row = next(r for r in data["rows"] if r["strategy"] == "mirrored" and r["workers"] == 4)
    assert row["speedup"] == pytest.approx(5.0 / 1.6)
    assert data["sweep_ids"] == ["sweep-fixture"]


def test_csv_has_one_line_per_configuration(table):
    rows = list(csv.DictReader(io.StringIO(render_table(table, "csv"))))
    assert [(r["strategy"], r["workers"]) for r in rows] == [
        ("mirrored", "1"),
        ("mirrored", "2"),
        ("mirrored", "4"),
        ("jax", "1"),
        ("jax", "2"),
    ]
    assert float(rows[2]["efficiency"]) == pytest.approx(5.0 / 1.6 / 4, rel=1e-5)
    assert rows[0]["gpu_util"] == "" and "no GPU data" in rows[0]["notes"]
    assert rows[0]["run_ids"].split() == [
        "sweep-fixture-mirrored-n1-r0",
        "sweep-fixture-mirrored-n1-r1",
    ]


def test_text_and_markdown_show_sections_and_notes(table):
    text = render_table(table, "text")
    assert "Epoch time and speedup" in text and "3.12×" in text and "78%" in text
    assert "5.000 s ± 1.414" in text
    assert "Accelerators and energy: no GPU data" in text
    md = render_table(table, "md")
    assert "| mirrored | 4 |" in md and "_no trace data_" in md and "## Cost" in md


def test_unknown_format_is_refused(table):
    with pytest.raises(ValueError):
        render_table(table, "xml")


def test_plots_written_as_png_and_svg(table, tmp_path):
    written, skipped = write_plots(table, tmp_path / "plots", ("png", "svg"))
    names = sorted(p.name for p in written)
    assert names == sorted(
        f"{n}.{ext}"
        for n in ("epoch_time", "speedup", "efficiency", "samples_per_dollar")
        for ext in ("png", "svg")
    )
    for path in written:
        assert path.stat().st_size > 5000
        if path.suffix == ".png":
            assert _png_size(path) == (640, 420)
        else:
            assert path.read_text().lstrip().startswith("<?xml")
    assert sorted(skipped) == [
        "computation vs other: no trace data",
        "energy: no GPU data",
        "memory: no memory data",
    ]


def test_plot_series(table):
    labels = speedup_figure(table).axes[0].get_legend_handles_labels()[1]
    assert labels == ["ideal", "mirrored", "jax"]
    ax = speedup_figure(table).axes[0]
    ideal = ax.lines[0]
    assert list(ideal.get_xdata()) == [1, 2, 4] and list(ideal.get_ydata()) == [1, 2, 4]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    mirrored = ax.lines[1]
    assert list(mirrored.get_ydata()) == pytest.approx([1.0, 2.0, 5.0 / 1.6])
    eff = efficiency_figure(table).axes[0]
    assert "poor below 75%" in eff.get_legend_handles_labels()[1]
    assert epoch_time_figure(table).axes[0].get_legend_handles_labels()[1] == ["mirrored", "jax"]


def test_computation_bars_stack_to_the_step():
    pts = [
        Point(
            run_id=str(n),
            strategy="s",
            workers=n,
            status="finished",
            epochs=1,
            epoch_s=1.0 / n,
            compute_percent=80.0 - 10 * n,
            communication_percent=10.0 * n,
        )
        for n in (1, 2)
    ]
    ax = computation_figure(build_table(pts)).axes[0]
    assert ax.get_legend_handles_labels()[1] == [
        "computation",
        "communication (not overlapped)",
        "other",
    ]
    heights = [round(sum(p.get_height() for p in ax.patches[i::2]), 6) for i in range(2)]
    assert heights == [100.0, 100.0]
    assert [p.get_height() for p in ax.patches[2:4]] == pytest.approx([10.0, 20.0])  # exposed comm.


def test_cli_report_writes_formats_and_plots(runs, tmp_path):
    from advisor.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs), "report", "--format", "csv", "--plots", str(tmp_path / "p")]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("strategy,workers,runs")
    assert (tmp_path / "p" / "speedup.png").is_file()
    out = tmp_path / "r.md"
    result = CliRunner().invoke(
        cli, ["report", str(runs / "sweeps" / "sweep-fixture"), "--format", "md", "-o", str(out)]
    )
    assert result.exit_code == 0 and out.read_text().startswith(
        "# Scaling report — sweep sweep-fixture"
    )
    result = CliRunner().invoke(cli, ["report", str(runs), "--format", "json"])
    assert result.exit_code == 0 and len(json.loads(result.stdout)["rows"]) == 5


def test_cli_report_errors_are_one_line(tmp_path):
    from advisor.cli.main import cli

    result = CliRunner().invoke(cli, ["--runs-dir", str(tmp_path / "empty"), "report"])
    assert result.exit_code == 2
    assert "no runs and no sweeps" in result.stderr and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["--runs-dir", str(tmp_path), "report", "nope"])
    assert result.exit_code == 2 and "no sweep 'nope'" in result.stderr


def test_saved_json_report_renders_again(table, tmp_path):
    from advisor.cli.main import cli

    saved = tmp_path / "scaling.json"
    saved.write_text(render_table(table, "json"))
    result = CliRunner().invoke(
        cli, ["report", str(saved), "--format", "md", "--plots", str(tmp_path / "p")]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == render_table(table, "md")
    assert (tmp_path / "p" / "efficiency.png").is_file()
    (tmp_path / "bad.json").write_text('{"rows": [{"nope": 1}]}')
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "bad.json")])
    assert result.exit_code == 2 and "cannot read the saved report" in result.stderr
