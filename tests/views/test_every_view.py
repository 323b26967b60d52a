"""One voice: one real small run and a hand-written two-point sweep, rendered through
every view — ``advisor check`` (text and JSON), ``show``, ``runs``, ``report``, ``runs_frame()``,
the TUI (Runs, Findings and Scaling screens) and the MLflow export — give the same samples/s, epoch
time (first epoch out), strategy name, worker count and goodput; and hints that name an extra
(``keras-advisor[profile]``) keep its name in check, show, demo and the TUI.

``runs_frame()`` is the reference (full precision). A text view passes when its figure is the
frame's value to the digits it shows (half a unit of its last digit either way)."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scaling_fixtures import budget, write_run

from advisor.cli.main import cli
from advisor.numbers import count_text
from advisor.store.sweep import ConfigRecord, SweepRecord, write_sweep

pytestmark = pytest.mark.slow  # trains a real model and drives the TUI (about ten seconds)

SWEEP = "sweep-20261204-080000-ab12"
POINTS = {1: ([3.0, 2.0, 2.2], 0.8), 2: ([3.0, 1.2, 1.3], 0.7)}  # workers: (epoch seconds, goodput)


def _fit(runs: Path) -> str:
    """A tiny real Keras fit with the callback (three epochs, about a second of training)."""
    import keras

    import advisor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 16)).astype("float32")
    y = rng.normal(size=(4096, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    callback = advisor.AdvisorCallback(
        runs_dir=runs,
        window_seconds=0.2,
        warmup_steps=2,
        log_every_seconds=None,
        whatif=None,
        pipeline=False,
        price_per_hour=2.0,
    )
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[callback])
    return callback.session.writer.run_id


def _sweep(runs: Path) -> None:
    """mirrored ×1 and ×2, written through the RunWriter as ``advisor scale`` would label them."""
    for workers, (epochs, goodput) in POINTS.items():
        write_run(
            runs,
            f"{SWEEP}-mirrored-n{workers}-r0",
            sweep_id=SWEEP,
            strategy="mirrored",
            workers=workers,
            epochs=epochs,
            samples_per_epoch=4096,
            steps_per_epoch=64 // workers,
            price_per_hour=2.0,
            extra=[budget(goodput, sum(epochs) + 1.0)],
        )
    write_sweep(
        runs,
        SweepRecord(
            sweep_id=SWEEP,
            strategies=["mirrored"],
            workers=list(POINTS),
            repeat=1,
            configs=[
                ConfigRecord(
                    strategy="mirrored",
                    workers=n,
                    repeat=0,
                    run_id=f"{SWEEP}-mirrored-n{n}-r0",
                    status="finished",
                )
                for n in POINTS
            ],
        ),
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, str, Any]:
    """(runs directory, the real run's id, runs_frame() of the store)."""
    import advisor

    runs = tmp_path_factory.mktemp("every-view") / "runs"
    run_id = _fit(runs)
    _sweep(runs)
    return runs, run_id, advisor.runs_frame(runs)


def shown(text: str, expected: float, scale: float = 1.0) -> None:
    """``text`` (``30,580.3``, ``0.14``, ``47``) is ``expected × scale`` to the digits it shows."""
    value = float(text.replace(",", ""))
    digits = len(text.split(".")[1]) if "." in text else 0
    assert abs(value - expected * scale) <= 0.5 * 10**-digits + 1e-9, (
        f"{text} shown for {expected * scale}"
    )


def one(pattern: str, text: str) -> str:
    match = re.search(pattern, text, re.MULTILINE)
    assert match, f"{pattern!r} not in:\n{text}"
    return match.group(1)


def cli_out(runs: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--runs-dir", str(runs), *args], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1), result.output  # 1: findings at the fail level
    return result.output


def figures(frame: Any, run_id: str) -> tuple[float, float, str, int, float]:
    row = frame.loc[run_id]
    return (
        row["throughput.samples_per_s"],
        row["time.epoch_s.mean"],
        row["strategy"],
        row["num_workers"],
        row["goodput"],
    )


def test_the_frame_is_what_was_measured(store):
    runs, run_id, frame = store
    samples_per_s, epoch_s, strategy, workers, goodput = figures(frame, run_id)
    assert strategy == "single" and workers == 1 and 0 < goodput < 1 and samples_per_s > 0
    for n, (epochs, point_goodput) in POINTS.items():
        row = figures(frame, f"{SWEEP}-mirrored-n{n}-r0")
        assert row[1:] == (
            pytest.approx(np.mean(epochs[1:])),
            "mirrored",
            n,
            pytest.approx(point_goodput),
        )
        assert row[0] == pytest.approx(4096 * len(epochs) / sum(epochs))


def test_check_text_and_json(store):
    runs, run_id, frame = store
    for rid in (run_id, f"{SWEEP}-mirrored-n2-r0"):
        samples_per_s, epoch_s, strategy, workers, goodput = figures(frame, rid)
        text = cli_out(runs, "check", rid, "--format", "text")
        shown(one(r"^  ([\d,.]+) samples/s", text), samples_per_s)
        if strategy != "single":  # the header names a strategy other than the default
            assert one(r"^advisor check · run \S+ \((.*)\)$", text).split(", ")[1] == strategy
        facts = json.loads(cli_out(runs, "check", rid, "--format", "json"))["facts"]
        assert facts["throughput.samples_per_s"]["value"] == pytest.approx(samples_per_s, rel=1e-12)
        assert facts["time.epoch_s.mean"]["value"] == pytest.approx(epoch_s, rel=1e-12)
        assert facts["goodput"]["value"] == pytest.approx(goodput, rel=1e-12)
        assert facts["context.strategy_name"]["value"] == strategy


def test_show(store):
    runs, run_id, frame = store
    for rid in (run_id, f"{SWEEP}-mirrored-n2-r0"):
        samples_per_s, epoch_s, strategy, workers, goodput = figures(frame, rid)
        text = cli_out(runs, "show", rid)
        shown(one(r"^\s+samples/s\s+([\d,.]+)\s*$", text), samples_per_s)
        shown(one(r"epoch time \(mean, first epoch out\)\s+([\d.]+) s", text), epoch_s)
        shown(one(r"goodput (\d+)%", text), goodput, 100)
        assert one(r"^strategy\s+(\S+ ×\d+) ·", text) == f"{strategy} ×{workers}"


def test_runs(store):
    runs, _, frame = store
    text = cli_out(runs, "runs")
    rows = {
        cells[0]: cells
        for cells in (re.split(r"\s{2,}", line.strip()) for line in text.splitlines())
        if cells[0] in frame.index
    }
    assert set(rows) == set(frame.index)
    for rid, cells in rows.items():
        samples_per_s, _, strategy, workers, _ = figures(frame, rid)
        assert cells[3] == strategy and int(cells[4]) == workers
        shown(cells[5], samples_per_s)
        assert cells[6] == count_text(
            frame.loc[rid, "cost.samples_per_dollar"]
        )  # as the TUI's list writes it


def test_report_of_the_sweep(store):
    runs, _, frame = store
    text = cli_out(runs, "report", SWEEP)
    table = text[text.index("Epoch time and speedup") :]
    header = re.split(r"\s{2,}", table.splitlines()[1].strip())
    for n in POINTS:
        samples_per_s, epoch_s, strategy, workers, goodput = figures(
            frame, f"{SWEEP}-mirrored-n{n}-r0"
        )
        line = next(
            line for line in table.splitlines() if re.match(rf"^{strategy}\s+{workers}\s", line)
        )
        cells = dict(zip(header, re.split(r"\s{2,}", line.strip())))
        shown(cells["epoch time"].removesuffix(" s"), epoch_s)
        shown(cells["samples/s"], samples_per_s)
        shown(cells["goodput"].removesuffix("%"), goodput, 100)


def test_the_tui_runs_findings_and_scaling_screens(store, monkeypatch):
    from textual.widgets import DataTable, Static

    from advisor.tui.app import make_app
    from advisor.tui.messages import Navigate
    from advisor.tui.screens.findings import FindingsScreen
    from advisor.tui.screens.scaling import ScalingScreen

    runs, run_id, frame = store
    monkeypatch.chdir(runs.parent)

    def plain(widget: Static) -> str:
        from rich.console import Console

        console = Console(width=200, file=io.StringIO(), color_system=None)
        console.print(widget.content)
        return console.file.getvalue()  # type: ignore[attr-defined]

    async def until(pilot: Any, condition: Any) -> None:
        for _ in range(400):
            if condition():
                return
            await pilot.pause(0.05)
        raise AssertionError("the screen did not fill in within 20 s")

    async def scenario() -> None:
        app = make_app(None, runs_dir=runs, config=None, export_dir="exports")
        async with app.run_test(size=(200, 50)) as pilot:
            table = app.screen.query_one("#runs", DataTable)
            await until(pilot, lambda: not app.screen.left and table.row_count == len(frame))
            columns = [str(c.key.value) for c in table.ordered_columns]
            for i in range(table.row_count):
                row = dict(zip(columns, map(str, table.get_row_at(i))))
                samples_per_s, _, strategy, workers, _ = figures(frame, row["run"])
                shown(row["samples/s"].strip(), samples_per_s)
                assert row["strategy"] == strategy and int(row["workers"]) == workers
                assert row["samples/$"].strip() == count_text(
                    frame.loc[row["run"], "cost.samples_per_dollar"]
                )

            for rid in (run_id, f"{SWEEP}-mirrored-n2-r0"):
                samples_per_s, _, strategy, workers, goodput = figures(frame, rid)
                app.post_message(Navigate("findings", path=str(runs / rid)))
                await until(
                    pilot,
                    lambda rid=rid: (
                        isinstance(app.screen, FindingsScreen)
                        and app.screen.report is not None
                        and app.screen.report.run.run_id == rid
                    ),
                )
                await pilot.pause(0.1)
                assert f"{strategy} ×{workers})" in plain(app.screen.query_one("#title", Static))
                shown(
                    one(r"^([\d,.]+) samples/s", plain(app.screen.query_one("#headline", Static))),
                    samples_per_s,
                )
                shown(
                    one(r"goodput (\d+)%", plain(app.screen.query_one("#budget", Static))),
                    goodput,
                    100,
                )
                named = extras_named(
                    plain(app.screen.query_one("#decide", Static))
                )  # hints keep their extra
                assert "[profile]" in named and "" not in named
                app.pop_screen()

            app.post_message(Navigate("scaling", sweep=SWEEP))
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, ScalingScreen)
                    and app.screen.query_one("#scaling", DataTable).row_count == len(POINTS)
                ),
            )
            grid = app.screen.query_one("#scaling", DataTable)
            header = [str(c.label) for c in grid.ordered_columns]
            for i in range(grid.row_count):
                cells = dict(zip(header, (str(v).strip() for v in grid.get_row_at(i))))
                rid = f"{SWEEP}-{cells['strategy']}-n{cells['workers']}-r0"
                samples_per_s, epoch_s, _, _, goodput = figures(frame, rid)
                shown(cells["epoch time"].removesuffix(" s"), epoch_s)
                shown(cells["samples/s"], samples_per_s)
                if "goodput" in cells:
                    shown(cells["goodput"].removesuffix("%"), goodput, 100)

    asyncio.run(scenario())


def test_the_mlflow_export(store, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    runs, run_id, frame = store
    uri = (tmp_path / "mlruns").as_uri()  # a local file store: no server, no migrations
    monkeypatch.chdir(
        tmp_path
    )  # anything MLflow writes relative to the working directory stays here
    monkeypatch.setenv(
        "MLFLOW_ALLOW_FILE_STORE", "true"
    )  # MLflow 3 keeps the file store in maintenance
    client = mlflow.tracking.MlflowClient(uri)
    for rid in (run_id, f"{SWEEP}-mirrored-n2-r0"):
        cli_out(
            runs,
            "export",
            rid,
            "--to",
            "mlflow",
            "--experiment",
            "every-view",
            "--tracking-uri",
            uri,
        )
        (run,) = client.search_runs(
            [client.get_experiment_by_name("every-view").experiment_id],
            filter_string=f"tags.`advisor.run_id` = '{rid}'",
        )
        samples_per_s, epoch_s, strategy, workers, goodput = figures(frame, rid)
        metrics, params = run.data.metrics, run.data.params
        assert metrics["advisor.throughput.samples_per_s"] == pytest.approx(
            samples_per_s, rel=1e-12
        )
        assert metrics["advisor.time.epoch_s.mean"] == pytest.approx(epoch_s, rel=1e-12)
        assert metrics["advisor.goodput"] == pytest.approx(goodput, rel=1e-12)
        assert params["advisor.strategy"] == strategy and int(params["advisor.workers"]) == workers


# -- hints that name an extra (keras-advisor[profile]) keep the extra's name in every view ---------
EXTRA = re.compile(r"keras-advisor(\[\w+\])?")


def extras_named(text: str) -> list[str]:
    """Every ``keras-advisor`` in ``text`` with the extra it names ('' where none follows)."""
    return [match.group(1) or "" for match in EXTRA.finditer(text)]


def test_hints_name_their_extra_in_check_and_show(store):
    runs, run_id, _ = store
    for view in (cli_out(runs, "check", run_id), cli_out(runs, "show", run_id)):
        named = extras_named(view)
        assert "[profile]" in named, (
            view
        )  # the run has no profile: the hint to capture one is there
        assert "" not in named, f"an extra's name was swallowed:\n{view}"


def test_demo_prints_the_run_as_show_does(store):
    """``advisor demo`` prints its run through show's ``print_run`` (training aside, same text)."""
    from rich.console import Console

    from advisor.cli.show import print_run
    from advisor.service import RunService

    runs, run_id, _ = store
    console = Console(width=200, file=io.StringIO(), color_system=None)
    s = RunService(runs)
    print_run(console, s, s.analyse(run_id))
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    named = extras_named(printed)
    assert "[profile]" in named and "" not in named
    assert printed.strip() == cli_out(runs, "show", run_id).strip()


def test_the_sweeps_progress_line_gives_the_reports_figure(store, capsys):
    """``advisor scale`` prints a line when a configuration ends: its samples/s is the run's, as the
    report gives it, not the last window's (4096 / 1.3 s here, well above the run's mean)."""
    from advisor.cli.scale import measured_rate
    from advisor.launch.progress import Display
    from advisor.store.sweep import ConfigRecord, SweepRecord

    runs, _, frame = store
    rec = ConfigRecord(strategy="mirrored", workers=2, run_id=f"{SWEEP}-mirrored-n2-r0")
    with Display(
        SweepRecord(sweep_id=SWEEP, configs=[rec]), runs, live=False, measured=measured_rate
    ) as display:
        rec.status, rec.seconds = "finished", 6.5
        display.finish(rec)
    line = one(r"^  (mirrored ×2: finished .*)$", capsys.readouterr().err)
    shown(one(r", ([\d,]+) samples/s", line), frame.loc[rec.run_id, "throughput.samples_per_s"])
