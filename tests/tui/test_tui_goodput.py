"""The run's time budget on the Findings screen: a stacked bar, its legend and goodput; one line
saying how to get a budget when the run has none.

The bar's arithmetic is checked on hand-built fact tables; the screen on a run trained with the
real AdvisorCallback (a tiny Keras model and a callback that sleeps at every batch, so that the
callbacks take more of the wall clock than the steps do)."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console
from tui_helpers import drive, make, until

from advisor.diagnosis.report import FactValue, as_facts
from advisor.numbers import percent
from advisor.tui.screens.findings import FindingsScreen
from advisor.tui.widgets.goodput_bar import NO_GOODPUT, GoodputBar, goodput_view


def row(category: str, share: float, part_of: str | None = None) -> dict:
    return {
        "category": category,
        "label": f"the {category} label",
        "seconds": share * 10.0,
        "share": share,
        "part_of": part_of,
    }


# A fit of 10 s: steps 46% (20% of the wall clock waiting for input inside them), callbacks 45%,
# start-up 6.5%, epoch boundaries 0.5%, advisor hooks 0.3%, checkpoints 1.7%, nothing unaccounted.
TABLE = [
    row("startup", 0.065),
    row("train_steps", 0.46),
    row("input_wait", 0.2, part_of="train_steps"),
    row("callbacks", 0.45),
    row("validation", 0.0),
    row("checkpoint", 0.017),
    row("epoch_boundary", 0.005),
    row("advisor_hooks", 0.003),
    row("unaccounted", 0.0),
]
FACTS = {
    "time.table": TABLE,
    "goodput": 0.46,
    "goodput.without_advisor": 0.4614,
    "time.input_wait.share": 0.2,
}


def plain(renderable, width: int = 80) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_segments_follow_the_table_and_the_input_wait_is_inside_the_steps():
    view = goodput_view(as_facts(FACTS))
    assert view is not None
    assert [s.category for s in view.segments] == [
        "startup",
        "train_steps",
        "callbacks",
        "checkpoint",
        "epoch_boundary",
        "advisor_hooks",
    ]
    cells = view.widths(100)
    assert sum(cells) == 100 and cells[:3] == [
        7,
        46,
        45,
    ]  # shares of the categories shown (they add to 1)
    assert sum(view.widths(7)) == 7 and view.widths(0) == [0] * 6


def test_legend_is_largest_first_with_the_small_categories_as_other():
    view = goodput_view(as_facts(FACTS))
    assert view is not None
    assert (
        view.legend().plain
        == "training steps 46% · callbacks 45% · start-up 6% · checkpoints 2% · other 0.8%"
    )
    assert view.goodput_line().plain.startswith(
        "goodput 46% of the wall clock in training steps (20% of the wall "
        "clock waiting for input) · 46% without the advisor"
    )
    lines = plain(view, width=60)
    assert lines[0].startswith("time budget █") and len(lines[0]) == 60
    assert lines[1].startswith("training steps 46% · callbacks 45%")


def test_the_compile_events_are_listed_under_the_bar():
    functions = [
        {
            "function": "train_step",
            "count": 80,
            "retraces": 79,
            "seconds": 5.3,
            "causes": "a new Python value ×79",
        },
        {"function": "Dataset_map_f", "count": 1, "retraces": 0, "seconds": 0.01, "causes": ""},
    ]
    table = [row("compile", 0.5), row("compile_startup", 0.05, part_of="compile"), *TABLE]
    view = goodput_view(as_facts({**FACTS, "time.table": table, "compile.functions": functions}))
    assert view is not None and view.segments[0].label == "compiling"
    assert view.compiled == (
        "compiled train_step 80× in 5.30 s, 79 again (a new Python value ×79)",
    )
    assert plain(view)[-1] == view.compiled[0]
    assert goodput_view(as_facts(FACTS)).compiled == ()  # type: ignore[union-attr]


def test_facts_as_the_report_holds_them_and_no_budget():
    view = goodput_view({name: FactValue(value=value) for name, value in FACTS.items()})
    assert view is not None and view.goodput == pytest.approx(0.46)
    assert goodput_view({}) is None
    assert goodput_view(as_facts({"time.table": [row("train_steps", 0.0)]})) is None


def test_the_input_wait_is_a_share_of_the_wall_clock_in_the_bar_and_in_show(tmp_path):
    """An input-bound run (its baseline: 97% of a step waits) whose steps take 19% of a 10 s fit:
    the 18% waiting for input is of the wall clock, and both the TUI's goodput line and `show`'s
    table say so (they once read "goodput 19% …, of which 18% waiting", as if 18% of the 19%)."""
    from click.testing import CliRunner
    from scaling_fixtures import budget

    from advisor.cli.main import cli
    from advisor.service import RunService
    from advisor.store.schema import BaselineRecord, WindowRecord
    from advisor.store.writer import RunWriter

    writer = RunWriter(tmp_path, manifest={"global_batch_size": 32}, name="waits")
    for i in range(4):
        writer.write(
            WindowRecord(
                t=time.time() + i,
                epoch=0,
                seconds=10.0,
                steps=31,
                samples=1000,
                step_begin=31 * i,
                step_end=31 * (i + 1),
            )
        )
    writer.write(
        BaselineRecord(
            t=time.time(),
            steps=100,
            batch_size=32,
            input_kind="tf.data",
            rounds=12,
            real_rounds=[100.0 + i for i in range(12)],
            cached_rounds=[4000.0 + i for i in range(12)],
            real_samples_per_s=105.5,
            cached_samples_per_s=4005.5,
        )
    )
    writer.write(budget(0.19))
    writer.close()
    facts = RunService(tmp_path).analyse(writer.run_id).facts
    wait = percent(facts["time.input_wait.share"], 0, fraction=True)
    assert wait == "18%"
    view = goodput_view(as_facts(facts))
    assert view is not None
    line = view.goodput_line().plain
    assert line.startswith(
        "goodput 19% of the wall clock in training steps "
        f"({wait} of the wall clock waiting for input)"
    )
    assert "of which" not in line
    shown = CliRunner().invoke(
        cli, ["--runs-dir", str(tmp_path), "show", writer.run_id], env={"COLUMNS": "200"}
    )
    assert "of which" not in shown.output
    row = next(line for line in shown.output.splitlines() if "waiting for input" in line)
    assert (
        row.lstrip().startswith("waiting for input, inside the training steps")
        and f" {wait[:-1]}." in row
    )


@pytest.fixture
def trained(tmp_path, monkeypatch):
    """A store in ./runs with one run trained by the real AdvisorCallback (budget on by default)."""
    keras = pytest.importorskip("keras")
    import numpy as np

    import advisor

    class SlowCallback(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.02)

    monkeypatch.chdir(tmp_path)
    x = np.random.default_rng(0).random((640, 4), dtype=np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = advisor.AdvisorCallback(
        runs_dir="runs", baseline=None, log_every_seconds=None, telemetry=False
    )
    model.fit(x, x[:, :1], batch_size=32, epochs=2, callbacks=[cb, SlowCallback()], verbose=0)
    return cb.run_path


@pytest.mark.slow
def test_findings_screen_shows_the_goodput_bar_of_a_trained_run(trained):
    async def scenario(pilot):
        await until(
            pilot, lambda: isinstance(pilot.app.screen, FindingsScreen) and pilot.app.screen.report
        )
        screen = pilot.app.screen
        facts = screen.report.facts
        bar = screen.query_one(GoodputBar)
        assert bar.budget is not None
        shown = plain(bar.content, width=120)
        order = [
            r["category"]
            for r in facts["time.table"].value
            if r["part_of"] is None and r["share"] > 0
        ]
        assert [s.category for s in bar.budget.segments] == order and "input_wait" not in order
        # The callback's 20 ms a batch outweighs the steps of this tiny model: callbacks come first.
        callbacks, steps = (
            percent(facts[f"time.{c}.share"].value, 0, fraction=True)
            for c in ("callbacks", "train_steps")
        )
        assert (
            shown[1].startswith(f"callbacks {callbacks} · ")
            and f" · training steps {steps}" in shown[1]
        )
        # the legend may wrap onto more lines (compile, the advisor's own phases); goodput follows
        goodput = f"goodput {percent(facts['goodput'].value, 0, fraction=True)} "
        assert any(line.startswith(goodput) for line in shown[2:]), shown

    drive(make(str(trained)), scenario)


@pytest.mark.slow
def test_a_run_without_a_budget_says_how_to_get_one(store):
    async def scenario(pilot):
        await until(
            pilot, lambda: isinstance(pilot.app.screen, FindingsScreen) and pilot.app.screen.report
        )
        bar = pilot.app.screen.query_one(GoodputBar)
        assert bar.budget is None and plain(bar.content) == [NO_GOODPUT]

    drive(make("run-input-bound"), scenario)
