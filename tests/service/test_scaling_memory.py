"""Peak memory per configuration in the scaling report, from runs written by real fits.

Three small real Keras fits share one runs directory: two repeats of one configuration with the
memory collector on (the default) and one configuration with it off. The table must carry the
largest peak the memory records hold, over the repeats, and say "no memory data" where there is
none; text, Markdown, CSV and JSON show the same numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _fit(store: Path, workers: str, memory: bool) -> None:
    import keras
    import numpy as np

    import advisor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 16)).astype("float32")
    y = rng.normal(size=(512, 1)).astype("float32")
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    cb = advisor.AdvisorCallback(
        runs_dir=store,
        tags={"scale.strategy": "default", "scale.workers": workers},
        memory=memory,
        baseline=False,
        whatif=False,
        telemetry=False,
        window_seconds=0.2,
        log_every_seconds=None,
    )
    model.fit(x, y, batch_size=64, epochs=2, callbacks=[cb], verbose=0)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory-sweep")
    _fit(root, "1", memory=True)
    _fit(root, "1", memory=True)
    _fit(root, "2", memory=False)
    return root


def _recorded_peaks(root: Path, run_ids: list[str]) -> float:
    """The largest RSS any memory record of these runs holds, read straight from the files."""
    from advisor.store.reader import read_run
    from advisor.store.schema import MemoryRecord

    values = [
        v
        for run_id in run_ids
        for r in read_run(str(root / run_id)).of_type(MemoryRecord)
        for v in (r.rss_peak, r.rss, r.rss_begin)
        if v is not None
    ]
    assert values, "the memory collector wrote no RSS"
    return max(values) / float(1 << 20)


def test_the_table_shows_each_configurations_largest_peak(store):
    from advisor.render.scaling import render_table
    from advisor.service.run_service import RunService

    table = RunService(store).scaling_table(str(store))
    one, two = table.row("default", 1), table.row("default", 2)
    assert one is not None and two is not None and one.runs == 2
    assert one.host_peak_mb == pytest.approx(_recorded_peaks(store, one.run_ids))
    assert one.host_peak_mb > 50  # a Python process with Keras and its backend loaded
    assert one.device_peak_mb is None  # CPU: no device allocator
    assert 0 < one.memory_peak_fraction <= 1
    assert two.host_peak_mb is None and "no memory data" in two.notes

    data = json.loads(render_table(table, "json"))
    by_workers = {r["workers"]: r for r in data["rows"]}
    assert by_workers[1]["host_peak_mb"] == pytest.approx(one.host_peak_mb)
    assert by_workers[2]["host_peak_mb"] is None
    text = render_table(table, "text")
    assert "Memory (peak of one process or device)" in text and "host RSS peak" in text
    shown = f"{one.host_peak_mb / 1024:.2f} GB" if one.host_peak_mb >= 1024 else None
    assert (shown or f"{one.host_peak_mb:.0f} MB") in text
    assert "host RSS peak" in render_table(table, "md")
    header = render_table(table, "csv").splitlines()[0].split(",")
    assert {"host_peak_mb", "device_peak_mb", "memory_peak_fraction"} <= set(header)


def test_the_memory_plot_is_drawn_from_the_peaks(store, tmp_path):
    pytest.importorskip("matplotlib")
    from advisor.render.plots import memory_figure, write_plots
    from advisor.service.run_service import RunService

    table = RunService(store).scaling_table(str(store))
    fig = memory_figure(table)
    ys = [y for line in fig.axes[0].get_lines() for y in line.get_ydata()]
    assert ys == [pytest.approx(table.row("default", 1).host_peak_mb)]
    written, _ = write_plots(table, tmp_path)
    assert tmp_path / "memory.png" in written
