"""The compare screen's part-by-part panel: each marked run against the first, with intervals,
on runs written with exact figures (comparison_runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from comparison_runs import write_run
from textual.widgets import Static
from tui_helpers import drive, make, settle

from advisor.tui.screens.compare import CompareScreen

pytestmark = pytest.mark.slow  # drives the real Textual app


def test_the_compare_screen_names_the_part_that_regressed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(Path("runs"), "b-slow-hook", callback_ms=1.5)
    write_run(Path("runs"), "a-base")  # the newest: listed first

    async def scenario(pilot):
        await pilot.press("space", "down", "space", "c")  # the base first, then the slow run
        await settle(pilot)
        compare = pilot.app.screen
        assert isinstance(compare, CompareScreen)
        text = str(compare.query_one("#parts", Static).render())
        assert "Against the first run, part by part (95% intervals)" in text
        assert "REGRESSION: `on_train_batch_end` of `Logger`" in text
        assert "Logger.on_train_batch_end: 0.1 → 1.5 ms/step, +1400.0% [" in text

    drive(make(), scenario)
