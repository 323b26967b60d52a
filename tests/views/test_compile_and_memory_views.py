"""Where a run's compile events and memory series are shown: ``advisor show`` (the time table's
compile line with its start-up and mid-fit parts, the traced functions under it, the "process
memory" line), ``runs_frame()``'s memory columns, and the TUI's run view (the functions under the
budget bar, the memory sparkline). The run is written record by record with the real run writer
and read back by the real reader and fact registry; no training, so the figures are exact."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.service import RunService
from advisor.store.schema import (
    BudgetRecord,
    CompileEvent,
    CompileRecord,
    ContextRecord,
    MemoryRecord,
)
from advisor.store.writer import RunWriter

MB = 1 << 20
LEAK_MB = 54  # per epoch
EPOCHS = 10
AVAILABLE_MB = 8000  # left at the last epoch: runs out ~148 epochs later


def _event(t: float, function: str, cause: str, seconds: float, **kw) -> CompileEvent:  # type: ignore[no-untyped-def]
    return CompileEvent(t=t, seconds=seconds, function=function, cause=cause, **kw)


def write_run(runs: Path, run_id: str = "views-1") -> Path:
    t0 = time.time() - 100.0
    writer = RunWriter(runs, run_id, manifest={"created": t0})
    events = [_event(t0 + 1, "train_step", "first", 1.0, phase="startup")]
    events += [
        _event(t0 + 2 + i, "train_step", "python_value", 0.5, detail=f"step: {i} → {i + 1}")
        for i in range(3)
    ]
    events.append(_event(t0 + 6, "eval_step", "first", 0.25))
    reason = "Call to `torch._dynamo.graph_break()`"
    events.append(_event(t0 + 6.5, "graph", "graph_break", 0.0, kind="graph_break", detail=reason))
    writer.write(CompileRecord(t=t0 + 7, backend="tensorflow", events=events))
    writer.write(
        BudgetRecord(
            t=t0 + 20,
            final=True,
            wall_seconds=10.0,
            steps=100,
            seconds={"startup": 0.5, "compile": 2.75, "train_steps": 6.75, "unaccounted": 0.0},
            source="track",
            compile_startup_seconds=1.0,
        )
    )
    for epoch in range(EPOCHS):
        rss = (1000 + LEAK_MB * epoch) * MB
        writer.write(
            MemoryRecord(
                t=t0 + 10 + epoch,
                epoch=epoch,
                seconds=1.0,
                rss_begin=rss - MB,
                rss=rss,
                rss_peak=rss + 10 * MB,
                available=(AVAILABLE_MB + LEAK_MB * (EPOCHS - 1 - epoch)) * MB,
            )
        )
    writer.write(ContextRecord(t=t0 + 30, values={"memory.planned_epochs": 1000}))
    writer.close("finished")
    return writer.path


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    write_run(tmp_path / "runs")
    return tmp_path / "runs"


def show(runs: Path) -> str:
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(runs), "show", "views-1", "--no-diagnosis"], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_show_has_the_compile_line_its_parts_and_the_functions(runs: Path) -> None:
    text = show(runs)
    lines = text.splitlines()
    (compiling,) = [line for line in lines if "compiling (traces and compilations" in line]
    assert "2.75" in compiling and "27.5%" in compiling
    (startup,) = [line for line in lines if "compiling at start-up" in line]
    (midfit,) = [line for line in lines if "compiling mid-fit" in line]
    assert "1.00" in startup and "1.75" in midfit
    assert startup.startswith(" " * 3) and midfit.startswith(" " * 3)  # parts of compile
    assert "Traced and compiled functions" in text
    functions = text[text.index("Traced and compiled functions") :].splitlines()[1:3]
    # most retraces first: count, seconds, retraces with their cause, and what changed last
    assert functions[0].strip() == (
        "train_step: 4 × in 2.50 s, 3 again (a new Python value ×3): step: 2 → 3"
    )
    assert functions[1].strip() == "eval_step: 1 × in 0.25 s"
    assert "graph breaks: 1 (Call to `torch._dynamo.graph_break()` ×1)" in text


def test_show_has_the_memory_line_with_the_rate_and_deadline(runs: Path) -> None:
    (line,) = [x for x in show(runs).splitlines() if x.lstrip().startswith("process memory")]
    peak_gb = ((1000 + LEAK_MB * (EPOCHS - 1)) * MB + 10 * MB) / 2**30
    assert f"peak {peak_gb:.2f} GB" in line
    assert f"grows {LEAK_MB:.1f} ± 0.0 MB/epoch" in line
    # 8000 MB left at epoch 9, 54 MB an epoch: epoch 9 + 148.1
    assert f"runs out at epoch ~{9 + AVAILABLE_MB / LEAK_MB:,.0f}" in line


def test_runs_frame_has_the_memory_columns(runs: Path) -> None:
    pytest.importorskip("pandas", reason="the pandas extra is not installed")
    import advisor

    frame = advisor.runs_frame(runs)
    row = frame.loc["views-1"]
    assert row["memory.host.peak_bytes"] == (1000 + LEAK_MB * (EPOCHS - 1) + 10) * MB
    assert row["memory.growth_mb_per_epoch"] == pytest.approx(LEAK_MB)
    assert "memory.batch.largest" in frame.columns  # not measured here (batch_memory=False): NaN
    assert frame.attrs["units"]["memory.growth_mb_per_epoch"] == "MB"


def test_the_tui_run_view_lists_the_functions_and_draws_the_memory(runs: Path) -> None:
    pytest.importorskip("textual")
    from advisor.tui.widgets.goodput_bar import goodput_view
    from advisor.tui.widgets.memory_line import memory_text

    report = RunService(runs).diagnose("views-1")
    view = goodput_view(report.facts)
    assert view is not None and "compiling" in view.legend().plain
    assert view.compiled == ("compiled train_step 4× in 2.50 s, 3 again (a new Python value ×3)",)
    memory = memory_text(report.facts)
    assert memory is not None
    spark = memory.plain.split()[1]  # one bar per epoch, rising from the lowest to the highest
    assert len(spark) == EPOCHS and spark[0] == "▁" and spark[-1] == "█"
    assert list(spark) == sorted(spark)
    assert (
        f"grows {LEAK_MB:.1f} MB/epoch" in memory.plain and "runs out at epoch ~157" in memory.plain
    )
