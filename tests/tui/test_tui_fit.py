"""The app at an ordinary terminal width (140 columns): the runs table keeps every column whole and
gives way in its top finding first; charts of a flat series have a sensible axis; the command
palette names keys as people type them."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaling_fixtures import write_run as write_sweep_point
from scaling_fixtures import write_sweep_runs
from textual.widgets import DataTable
from tui_fixtures import write_run
from tui_helpers import drive, make, settle, until

from advisor.tui.columns import fit_widths, shorten
from advisor.tui.screens.live import LiveScreen
from advisor.tui.screens.runs import RunsScreen
from advisor.tui.widgets.charts import y_range
from advisor.tui.widgets.run_table import COLUMNS

SWEEP = "sweep-20261201-214201-5aef"  # ids as advisor scale and the RunWriter make them


@pytest.fixture
def long_ids(tmp_path, monkeypatch) -> Path:
    """A store with the ids real runs have (40-odd characters) and a multi-worker strategy."""
    monkeypatch.chdir(tmp_path)
    runs = Path("runs")
    write_sweep_runs(runs, sweep_id=SWEEP)
    write_sweep_point(
        runs,
        f"{SWEEP}-multiworker-n2-r0",
        sweep_id=SWEEP,
        strategy="multiworker",
        workers=2,
        ranks=2,
        manifest_strategy="MultiWorkerMirroredStrategy",
        epochs=[9.0, 3.0],
        samples_per_epoch=4096,
        steps_per_epoch=32,
    )
    write_run(
        runs,
        "20261201-214136-input-bound-demo-with-a-long-name-0e3bb0",
        minute=0,
        samples_per_s=118.0,
    )
    return runs


def test_at_140_columns_every_column_is_on_screen_with_its_whole_header(long_ids):
    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs", DataTable)
        assert (
            table.virtual_size.width <= table.scrollable_content_region.width
        )  # nothing to scroll to
        columns = {str(c.key.value): c for c in table.ordered_columns}
        for name in ("strategy", "workers", "sweep"):
            assert columns[name].label.plain == name and columns[name].width >= len(name)
        assert columns["strategy"].width >= len("multiworker")
        assert columns["top finding"].width < 34 and columns["run"].width < len(
            f"{SWEEP}-mirrored-n1-r0"
        )
        sweeps = {str(table.get_row_at(i)[COLUMNS.index("sweep")]) for i in range(table.row_count)}
        assert all(
            s.startswith("sweep") and s.endswith("5aef") for s in sweeps - {""}
        )  # told apart by its end
        strategies = {
            str(table.get_row_at(i)[COLUMNS.index("strategy")]) for i in range(table.row_count)
        }
        assert strategies == {"multiworker", "mirrored", "jax", "single"}
        runs = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert any(r.startswith("sweep-") and r.endswith("worker-n2-r0") for r in runs)
        long = next(r for r in runs if r.startswith("2026"))
        assert (
            long.endswith("long-name-0e3bb0") and "…" in long and len(long) == columns["run"].width
        )

    drive(make(), scenario, size=(140, 40))


def test_a_wider_terminal_gives_the_top_finding_its_room_back(long_ids):
    async def scenario(pilot):
        table = pilot.app.screen.query_one("#runs", DataTable)
        narrow = table.ordered_columns[COLUMNS.index("top finding")].width
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        wide = table.ordered_columns[COLUMNS.index("top finding")].width
        assert narrow < wide == 34
        assert table.row_count == 8  # the rows came back with the columns

    drive(make(), scenario, size=(140, 40))


def test_columns_give_way_in_order_down_to_their_minimum():
    natural = {"a": 10, "top": 30, "run": 40, "sweep": 20}
    shrink = (("top", 16), ("run", 24), ("sweep", 12))
    assert fit_widths(natural, 100, shrink) == natural
    assert fit_widths(natural, 90, shrink) == {**natural, "top": 20}
    assert fit_widths(natural, 70, shrink) == {"a": 10, "top": 16, "run": 24, "sweep": 20}
    assert fit_widths(natural, 10, shrink) == {"a": 10, "top": 16, "run": 24, "sweep": 12}


def test_shorten_marks_what_it_cut():
    assert shorten("C401 no-prefetch-or-parallel-map", 12) == "C401 no-pre…"
    assert (
        shorten("sweep-20261201-214201-5aef-mirrored-n4-r0", 21, keep_end=True)
        == "sweep-…mirrored-n4-r0"
    )
    assert shorten("jax", 12) == "jax"


def test_a_flat_percentage_is_drawn_on_a_0_to_100_axis():
    assert y_range([100.0, 100.0, 100.0], 0, 100) == (0, 100)
    assert y_range([40.0, 40.0], 0, 100) == (0, 100)
    low, high = y_range([100.0, 100.0])  # no bounds: a small margin, not ±50%
    assert 89 < low < 100 < high < 111
    assert y_range([0.0, 0.0]) == (-0.1, 0.1)
    assert y_range([118.0, 120.0], 0) == (
        0,
        pytest.approx(132.0),
    )  # from zero, the line below the top


def test_the_live_utilisation_axis_of_a_flat_series_is_0_to_100(store):
    async def scenario(pilot):
        await pilot.press("l")
        await until(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, LiveScreen) and pilot.app.screen.snapshot is not None
            ),
        )
        await settle(pilot)
        screen = pilot.app.screen
        utilization = screen.query_one("#utilization")
        assert {y for _, y in utilization.series["CPU (mean of cores)"]} == {40.0}  # flat
        assert utilization.y_limits == (0, 100)
        axis = [
            line.split("┤")[0].strip() for line in utilization.as_text().splitlines() if "┤" in line
        ]
        assert (
            axis[0] == "100.0"
            and axis[-1] == "0.0"
            and not any(v.startswith("1") and len(v) > 5 for v in axis)
        )
        throughput = screen.query_one("#throughput")
        assert throughput.y_limits[0] == 0

    drive(make("run-input-bound"), scenario, size=(140, 40))


def test_the_palette_and_help_name_keys_as_they_are_typed(store):
    async def scenario(pilot):
        commands = {c.title: c.help for c in pilot.app.get_system_commands(pilot.app.screen)}
        assert commands["Filter"] == "key: /"
        assert commands["Help"] == "key: ?"
        assert commands["Mark"] == "key: space"
        assert not any("slash" in text or "question_mark" in text for text in commands.values())

    drive(make(), scenario, size=(140, 40))
