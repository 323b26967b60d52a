"""``advisor tui`` on the command line: its help, a target that does not exist, a missing extra."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from advisor.cli.main import cli


def test_help_names_the_three_kinds_of_target():
    result = CliRunner().invoke(cli, ["tui", "--help"])
    assert result.exit_code == 0
    assert (
        "advisor tui path/to/runs" in result.output
        and "sweep" in result.output
        and "--export-dir" in result.output
    )


def test_an_unknown_target_is_one_line_and_exit_2(store):
    result = CliRunner().invoke(cli, ["--runs-dir", str(store), "tui", "no-such-run"])
    assert result.exit_code == 2
    expected = (
        f"advisor: error: 'no-such-run' is neither a runs directory nor a run or sweep in {store} "
        "(see `advisor runs`)"
    )
    assert result.output.strip().splitlines() == [expected]


def test_without_the_tui_extra_it_says_what_to_install(monkeypatch, store):
    monkeypatch.setitem(sys.modules, "textual_plotext", None)  # as if the extra were not installed
    result = CliRunner().invoke(cli, ["--runs-dir", str(store), "tui"])
    assert result.exit_code == 2
    assert "advisor tui needs textual: pip install 'keras-advisor[tui]'" in result.output
