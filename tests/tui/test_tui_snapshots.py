"""What each screen looks like on the fixture store (pytest-textual-snapshot; the accepted SVGs
are in __snapshots__/). After a deliberate change of looks: ``pytest tests/tui --snapshot-update``
and review the new SVGs before committing them."""

from __future__ import annotations

import pytest
from tui_helpers import SIZE, make, settle, until

from advisor.tui.screens.findings import FindingsScreen
from advisor.tui.screens.live import LiveScreen

pytestmark = pytest.mark.slow  # drives the real Textual app (seconds per test)


async def ready(pilot) -> None:
    await settle(pilot)


def test_runs_screen(store, snap_compare):
    assert snap_compare(make(), terminal_size=SIZE, run_before=ready)


def test_findings_screen(store, snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        assert isinstance(pilot.app.screen, FindingsScreen)

    assert snap_compare(make("run-input-bound"), terminal_size=SIZE, run_before=before)


def test_scaling_screen(store, snap_compare):
    assert snap_compare(make("sweep-fixture"), terminal_size=SIZE, run_before=ready)


def test_live_screen_of_a_finished_run(store, snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        await pilot.press("l")
        await until(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, LiveScreen) and pilot.app.screen.snapshot is not None
            ),
        )
        await settle(pilot)
        pilot.app.clear_notifications()

    assert snap_compare(make("run-input-bound"), terminal_size=SIZE, run_before=before)


def test_compare_screen(store, snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        await pilot.press("space", "space", "c")  # the two newest runs
        await settle(pilot)

    assert snap_compare(make(), terminal_size=SIZE, run_before=before)


def test_help_screen(store, snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")

    assert snap_compare(make(), terminal_size=SIZE, run_before=before)
