"""The app driven headless (Textual's Pilot) on the fixture store: navigation, sorting, filtering,
comparison, the detail pane, export and plots, help and the palette, and what a user sees when a
store is empty or a run is corrupt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static
from tui_helpers import drive, make, settle, until

from advisor.tui.screens.compare import CompareScreen
from advisor.tui.screens.findings import FindingsScreen
from advisor.tui.screens.help import HelpScreen
from advisor.tui.screens.live import LiveScreen
from advisor.tui.screens.runs import RunsScreen
from advisor.tui.screens.scaling import ScalingScreen
from advisor.tui.widgets.finding_detail import FindingDetail

pytestmark = pytest.mark.slow  # drives the real Textual app (seconds per test)


def run_ids(screen: RunsScreen) -> list[str]:
    table = screen.query_one("#runs", DataTable)
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


def cell(screen, selector: str, row: int, column: str) -> str:
    table = screen.query_one(selector, DataTable)
    return str(table.get_cell_at((row, table.get_column_index(column)))).strip()


def text_of(screen, selector: str, width: int = 150) -> str:
    return _plain(screen.query_one(selector, Static), width)


def goto(screen: RunsScreen, run_id: str) -> None:
    table = screen.query_one("#runs", DataTable)
    table.move_cursor(row=run_ids(screen).index(run_id))


def test_runs_screen_lists_every_run_newest_first_with_its_top_finding(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, RunsScreen)
        ids = run_ids(screen)
        assert len(ids) == 10 and ids[0] == "sweep-fixture-mirrored-n4-r0"
        assert ids[-1] == "run-corrupt"  # an unreadable run has no date: it comes last
        assert ids[-2] == "run-input-bound"  # the oldest readable run
        last = ids.index("run-input-bound")
        assert cell(screen, "#runs", last, "top finding") == "C401 no-prefetch-or-parallel-map"
        assert cell(screen, "#runs", last, "samples/s") == "115.2"
        assert cell(screen, "#runs", ids.index("run-priced"), "samples/$") == "1.4M"
        assert cell(screen, "#runs", ids.index("run-corrupt"), "status") == "unreadable"
        assert "10 runs" in text_of(screen, "#status")

    drive(make(), scenario)


def test_navigation_enter_findings_escape_back_w_scaling_l_live(store):
    async def scenario(pilot):
        goto(pilot.app.screen, "run-input-bound")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, FindingsScreen)
        await pilot.press("escape")
        assert isinstance(pilot.app.screen, RunsScreen)
        goto(pilot.app.screen, "sweep-fixture-jax-n2-r0")
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ScalingScreen)
        assert pilot.app.screen.sweep == "sweep-fixture"
        await pilot.press("escape", "l")
        await settle(pilot)
        assert isinstance(pilot.app.screen, LiveScreen)
        await until(pilot, lambda: pilot.app.screen.snapshot is not None)
        assert pilot.app.screen.snapshot.final  # a finished run: the live view says so at once
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, FindingsScreen)
        await pilot.press("q")

    app = drive(make(), scenario)
    assert app.return_code == 0


def test_sorting_by_key_and_by_clicking_a_header(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        await pilot.press("s")  # date → status
        assert screen.sort_column == "status"
        await pilot.press("s", "s")  # → samples/s → samples/$
        assert screen.sort_column == "samples/$" and screen.reverse
        ids = run_ids(screen)
        assert ids[0] == "run-priced" and ids[1] == "sweep-fixture-mirrored-n4-r0"
        await pilot.press("S")
        assert run_ids(screen)[0] == "sweep-fixture-jax-n1-r0"
        table = screen.query_one("#runs", DataTable)
        column = table.get_column_index("workers")
        x = sum(c.get_render_width(table) for c in table.ordered_columns[:column]) + 2  # its header
        await pilot.click("#runs", offset=(x, 0))
        assert screen.sort_column == "workers"
        cells = [cell(screen, "#runs", i, "workers") for i in range(table.row_count)]
        workers = [int(c) for c in cells if c != "—"]  # "—": the unreadable run has no worker count
        assert workers == sorted(workers) and cells.count("—") == 1

    drive(make(), scenario)


def test_filtering_narrows_the_list_and_escape_clears_it(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        await pilot.press("slash", *"tag:team=vision")
        assert run_ids(screen) == ["run-priced"]
        assert "1 of 10 runs" in text_of(screen, "#status")
        await pilot.press("escape")
        assert len(run_ids(screen)) == 10
        await pilot.press("slash", *"strategy:jax", "enter")
        assert run_ids(screen) == ["sweep-fixture-jax-n2-r0", "sweep-fixture-jax-n1-r0"]
        assert pilot.app.focused is screen.query_one("#runs")

    drive(make(), scenario)


def test_compare_two_marked_runs(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        await pilot.press("c")
        assert not isinstance(pilot.app.screen, CompareScreen)  # nothing marked: a hint, no screen
        goto(screen, "run-healthy")
        await pilot.press("space")
        goto(screen, "run-input-bound")
        await pilot.press("space", "c")
        await settle(pilot)
        compare = pilot.app.screen
        assert isinstance(compare, CompareScreen)
        metrics = compare.query_one("#metrics", DataTable)
        assert [c.label.plain for c in metrics.ordered_columns][1:] == [
            "run-healthy",
            "run-input-bound",
        ]
        differing = compare.query_one("#differing", DataTable)
        rows = {
            str(differing.get_row_at(i)[0]): [str(c) for c in differing.get_row_at(i)[2:]]
            for i in range(differing.row_count)
        }
        assert rows["C401"] == ["pass", "fail: error"]

    drive(make(), scenario)


def test_findings_detail_pane_shows_message_evidence_fix_gain_and_docs(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, FindingsScreen)
        table = screen.query_one("#findings", DataTable)
        assert str(table.get_row_at(0)[2]) == "C401" and str(table.get_row_at(1)[2]) == "M108"
        assert "fail 4" in text_of(
            screen, "#counts"
        )  # C401, M108; M102 (no price) and M109 (no profile): info
        assert "To decide more" in text_of(screen, "#decide")
        detail = screen.query_one(FindingDetail)
        assert detail.code == "C401"
        await pilot.press("down")
        assert detail.code == "M108"
        body = detail.query_one("#detail-body", Static)
        shown = _plain(body, width=90)
        for expected in (
            "input costs 81% of step time",
            "Fix:",
            "the input served from memory",
            "5.3×",
            "baseline.cached_samples_per_s",
            "M108.error_fraction",
            "docs/rules/M108.md",
            "What it checks",
            "How to fix",
        ):
            assert expected in shown, expected
        await pilot.press("v")  # severity: error
        assert [str(table.get_row_at(i)[2]) for i in range(table.row_count)] == ["C401", "M108"]
        await pilot.press("v", "v", "v", "f")  # severity back to all; section: the first one (M1)
        codes = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert codes and all(c.startswith("M1") for c in codes) and codes[0] == "M108"

    drive(make("run-input-bound"), scenario)


def _plain(widget: Static, width: int) -> str:
    """What a Static shows, as plain text at ``width`` columns."""
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_export_writes_the_report_and_says_where(store):
    async def scenario(pilot):
        await pilot.press("e")
        await settle(pilot)
        notes = [n.message for n in pilot.app._notifications]
        assert any("wrote exports/run-input-bound.report.json" in m for m in notes), notes

    drive(make("run-input-bound"), scenario)
    report = json.loads(Path("exports/run-input-bound.report.json").read_text())
    assert report["run"]["run_id"] == "run-input-bound" and report["findings"][0]["code"] == "C401"


def test_scaling_screen_table_recommendations_plots_and_their_export(store):
    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, ScalingScreen)
        grid = screen.query_one("#scaling", DataTable)
        assert grid.row_count == 5
        assert [c.label.plain for c in grid.ordered_columns][:5] == [
            "strategy",
            "workers",
            "epoch time",
            "speedup",
            "efficiency",
        ]
        assert "fastest: mirrored ×4 — 772.8 samples/s" in text_of(
            screen, "#recommendations"
        )  # the report's
        assert "fastest mirrored ×4" in text_of(screen, "#recommendations")  # the measured best
        speedup = screen.query_one("#speedup")
        assert speedup.series["ideal"] == [(1, 1.0), (2, 2.0), (4, 4.0)]
        assert speedup.series["mirrored"][-1] == (4, 5.0 / 1.6)
        await pilot.press("p", "e")
        await settle(pilot)
        notes = " | ".join(n.message for n in pilot.app._notifications)
        assert (
            "exports/sweep-fixture-plots" in notes
            and "wrote exports/sweep-fixture.scaling.json" in notes
        )

    drive(make("sweep-fixture"), scenario)
    folder = Path("exports/sweep-fixture-plots")
    text = (folder / "speedup.txt").read_text()
    assert text.startswith(" " * 10) and "Speedup against ideal" in text
    assert all(f" {label}" in text for label in ("ideal", "mirrored", "jax"))  # the legend
    assert (folder / "speedup.png").stat().st_size > 1000  # matplotlib is in the test install
    saved = json.loads(Path("exports/sweep-fixture.scaling.json").read_text())
    assert [r["workers"] for r in saved["rows"]] == [1, 2, 1, 2, 4]


def test_recommendations_are_shown_when_the_table_has_them(store):
    from advisor.analysis.scaling import Recommendation
    from advisor.tui.screens.scaling import ScalingScreen as Screen

    table = make().data.table("sweep-fixture")
    table.recommendations = [
        Recommendation(
            "samples_per_dollar", "mirrored", 4, 1_391_094.0, "samples/$", "most samples per dollar"
        ),
        Recommendation(
            "projection",
            "mirrored",
            8,
            1.1,
            "s/epoch",
            "from the 12 % communication share",
            projected=True,
            assumptions=["communication grows with log2(N)"],
            findings=["D601"],
        ),
    ]
    shown = _plain(Static(Screen._recommendations(table)), width=120)
    assert "cheapest per sample: mirrored ×4 — 1,391,094 samples/$" in shown  # never 1.391e+06
    assert "projected: mirrored ×8 — 1.1 s/epoch  (projected)" in shown
    assert "assumes: communication grows with log2(N)" in shown and "findings: D601" in shown
    assert "no recommendation yet" not in shown


def test_help_and_a_palette_entry_for_every_key(store):
    async def scenario(pilot):
        runs = pilot.app.screen
        commands = {c.title: c for c in pilot.app.get_system_commands(runs)}
        for binding in [*runs.BINDINGS, *pilot.app.BINDINGS]:
            assert binding.description in commands
        await commands["Sort"].callback()  # what choosing it in the palette runs
        assert runs.sort_column == "status"
        await pilot.press("question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        keys = {b.description for b in pilot.app.screen.bindings}
        assert {"Findings", "Compare", "Filter", "Quit", "Export", "Plots"} <= keys
        await pilot.press("escape")
        assert pilot.app.screen is runs

    drive(make(), scenario)


def test_scaling_of_a_run_outside_a_sweep_is_the_whole_store(store):
    import shutil

    async def open_scaling(pilot):
        goto(pilot.app.screen, "run-healthy")
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ScalingScreen) and pilot.app.screen.sweep is None

    async def corrupt(pilot):
        await open_scaling(
            pilot
        )  # an unreadable run is one failure line; the others make the table
        table = pilot.app.screen.table
        assert table is not None and table.rows
        assert [f.run_id for f in table.failures] == ["run-corrupt"]
        assert "run-corrupt/run.json" in (table.failures[0].reason or "")

    async def grouped(pilot):
        await open_scaling(pilot)
        screen = pilot.app.screen
        assert "runs in" in text_of(screen, "#title")
        grid = screen.query_one("#scaling", DataTable)
        assert {
            (str(grid.get_row_at(i)[0]), str(grid.get_row_at(i)[1]).strip())
            for i in range(grid.row_count)
        } >= {
            ("mirrored", "4"),
            ("jax", "2"),
            ("single", "1"),
        }  # plain runs are the point "single ×1"

    drive(make(), corrupt)
    shutil.rmtree(store / "run-corrupt")
    drive(make(), grouped)


def test_an_empty_store_is_a_message(tmp_path):
    async def scenario(pilot):
        empty = pilot.app.screen.query_one("#empty", Static)
        assert empty.display and "No runs in" in str(empty.render())
        await pilot.press("enter", "e", "c", "w")
        assert isinstance(pilot.app.screen, RunsScreen)

    drive(make(runs_dir=tmp_path / "nothing-here"), scenario)


def test_a_corrupt_run_is_a_message_naming_the_file(store):
    async def scenario(pilot):
        goto(pilot.app.screen, "run-corrupt")
        await pilot.press("enter")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, FindingsScreen)
        message = text_of(screen, "#message")
        assert "Cannot show this run" in message and "run-corrupt/run.json" in message
        assert not screen.query_one("#body").display
        await pilot.press("escape", "l")
        await settle(pilot)
        assert "run-corrupt/run.json" in text_of(pilot.app.screen, "#message")

    drive(make(), scenario)


def test_a_sweep_without_runs_is_a_message(tmp_path):
    from advisor.store.sweep import SweepRecord, write_sweep

    write_sweep(
        tmp_path / "runs",
        SweepRecord(sweep_id="empty-sweep", strategies=["mirrored"], workers=[1, 2]),
    )

    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, ScalingScreen)
        assert (
            screen.query_one("#message").display and not screen.query_one("#scaling-body").display
        )
        assert "no finished runs in sweep empty-sweep to compare" in text_of(screen, "#message")

    drive(make("empty-sweep", runs_dir=tmp_path / "runs"), scenario)
