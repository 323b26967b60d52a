"""The scaling table from hand-made sweep runs: every value against a hand computation."""

from __future__ import annotations

import csv
import io
import re
import statistics
import time

import pytest
from click.testing import CliRunner
from scaling_fixtures import budget, write_run, write_sweep_runs

from advisor.analysis.scaling import build_table
from advisor.analysis.scaling_points import Point
from advisor.cli.main import cli
from advisor.service import RunService
from advisor.store.reader import RunReader
from advisor.store.sweep import ConfigRecord, SweepRecord, write_sweep


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaling") / "runs"
    write_sweep_runs(root)
    return root


def test_epoch_time_speedup_and_efficiency(sweep_dir):
    table = RunService(sweep_dir).scaling_table("sweep-fixture")
    assert [(r.strategy, r.workers) for r in table.rows] == [
        ("mirrored", 1),
        ("mirrored", 2),
        ("mirrored", 4),
        ("jax", 1),
        ("jax", 2),
    ]
    m1, m2, m4 = (table.row("mirrored", n) for n in (1, 2, 4))
    # The first epoch (9 s) is left out; N=1 ran twice with steady epochs of 4 s and 6 s.
    assert m1.runs == 2 and m1.epoch_s == pytest.approx(5.0)
    assert m1.epoch_s_std == pytest.approx(statistics.stdev([4.0, 6.0]))
    assert (m1.epoch_s_min, m1.epoch_s_max) == (4.0, 6.0)
    assert m1.first_epoch_s == pytest.approx(9.0)
    assert m2.speedup == pytest.approx(5.0 / 2.5) and m2.efficiency == pytest.approx(1.0)
    assert m4.speedup == pytest.approx(5.0 / 1.6) and m4.efficiency == pytest.approx(5.0 / 1.6 / 4)
    j2 = table.row("jax", 2)
    assert j2.speedup == pytest.approx(8.0 / 5.0) and j2.efficiency == pytest.approx(0.8)


def test_throughput_cost_and_batches(sweep_dir):
    table = RunService(sweep_dir).scaling_table("sweep-fixture")
    m2, j2 = table.row("mirrored", 2), table.row("jax", 2)
    # mirrored: the one worker counts the global batch: 2 × 4096 samples over 9 + 2.5 s.
    assert m2.samples_per_s == pytest.approx(8192 / 11.5)
    assert m2.usd_per_hour == pytest.approx(2.0) and m2.instances == 1
    assert m2.samples_per_dollar == pytest.approx(8192 / 11.5 * 3600 / 2.0)
    assert m2.usd_per_epoch == pytest.approx(2.5 / 3600 * 2.0)
    assert m2.per_replica_batch == pytest.approx(64) and m2.global_batch == pytest.approx(128)
    # jax: each process counts its own share: the job's samples are the sum over workers.
    assert j2.samples_per_s == pytest.approx(2 * 2 * 2048 / 14.0)
    assert j2.global_batch == pytest.approx(128) and j2.per_replica_batch == pytest.approx(64)
    assert j2.step_time_spread == pytest.approx((0.18 - 0.15) / 0.15)


def test_missing_data_is_a_note_not_a_failure(sweep_dir):
    table = RunService(sweep_dir).scaling_table("sweep-fixture")
    assert len(table.rows) >= 2
    for row in table.rows:
        assert "no GPU data" in row.notes and "no trace data" in row.notes
        assert row.gpu_util is None and row.compute_percent is None
    assert any(n.startswith("no GPU data") for n in table.notes)
    assert any(n.startswith("no trace data") for n in table.notes)
    assert not any(n.startswith("no price") for n in table.notes)


def test_price_override_and_instances_scale_cost(sweep_dir):
    table = RunService(sweep_dir).scaling_table(
        "sweep-fixture", price_per_hour=3.0, gpus_per_instance=2
    )
    m1, m4 = table.row("mirrored", 1), table.row("mirrored", 4)
    assert m1.instances == 1 and m4.instances == 2  # ⌈4 ÷ 2⌉ instances are paid for
    assert m4.usd_per_hour == pytest.approx(6.0)
    assert m4.samples_per_dollar == pytest.approx(m4.samples_per_s * 3600 / 6.0)


def test_points_without_price_say_so(tmp_path):
    root = tmp_path / "runs"
    write_sweep_runs(root, "sweep-free", price=None)
    table = RunService(root).scaling_table("sweep-free")
    assert len(table.rows) == 5  # the fixture's points, each without a price
    assert all(r.samples_per_dollar is None and "no price" in r.notes for r in table.rows)
    assert any(n.startswith("no price") for n in table.notes)


def test_tf_multiworker_counts_the_global_batch_once(tmp_path):
    root = tmp_path / "runs"
    # tf_keras MultiWorkerMirrored: both workers record the global batch of every step.
    write_run(
        root,
        "mw2",
        sweep_id="s",
        strategy="multiworker",
        workers=2,
        ranks=2,
        manifest_strategy="CollectiveAllReduceStrategy",
        epochs=[3.0, 2.0],
        samples_per_epoch=4096,
        steps_per_epoch=32,
    )
    (point,), _ = RunService(root).points(root, "s")
    assert point.samples_per_s == pytest.approx(8192 / 5.0)
    assert point.global_batch == pytest.approx(128) and point.per_replica_batch == pytest.approx(64)


def test_labels_come_from_sweep_file_then_tags_then_manifest(tmp_path):
    root = tmp_path / "runs"
    write_run(
        root,
        "a",
        sweep_id="s",
        strategy="ignored",
        workers=9,
        tags=False,
        manifest_strategy="MirroredStrategy",
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
    )
    write_run(
        root,
        "b",
        sweep_id="s",
        strategy="jax",
        workers=2,
        manifest_strategy="DataParallel",
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
    )
    write_sweep(
        root,
        SweepRecord(
            sweep_id="s",
            configs=[
                ConfigRecord(
                    strategy="mirrored", workers=4, repeat=1, run_id="b", status="finished"
                )
            ],
        ),
    )
    points, _ = RunService(root).points(root, "s")
    by_id = {p.run_id: p for p in points}
    assert (by_id["a"].strategy, by_id["a"].workers) == ("mirrored", 9)  # manifest: class, replicas
    assert (by_id["b"].strategy, by_id["b"].workers, by_id["b"].repeat) == ("mirrored", 4, 1)


def test_failures_from_runs_and_sweep_file(tmp_path):
    root = tmp_path / "runs"
    write_run(
        root,
        "s-mirrored-n1-r0",
        sweep_id="s",
        strategy="mirrored",
        workers=1,
        epochs=[1.0, 1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
    )
    write_sweep(
        root,
        SweepRecord(
            sweep_id="s",
            configs=[
                ConfigRecord(
                    strategy="mirrored", workers=1, run_id="s-mirrored-n1-r0", status="finished"
                ),
                ConfigRecord(
                    strategy="multiworker",
                    workers=2,
                    run_id="s-multiworker-n2-r0",
                    status="failed",
                    reason="worker 1 was killed by SIGKILL",
                    hint="a peer stopped",
                    log_tail="x",
                ),
            ],
        ),
    )
    table = RunService(root).scaling_table("s")
    assert [(r.strategy, r.workers) for r in table.rows] == [("mirrored", 1)]
    (failure,) = table.failures
    assert (failure.strategy, failure.workers, failure.reason) == (
        "multiworker",
        2,
        "worker 1 was killed by SIGKILL",
    )
    assert failure.hint == "a peer stopped"


def test_store_table_takes_every_run(sweep_dir):
    table = RunService(sweep_dir).scaling_table(sweep_dir)
    assert len(table.rows) == 5 and table.sweep_ids == ["sweep-fixture"]


def test_build_table_from_points_with_gpu_and_trace_data():
    pts = [
        Point(
            run_id="a",
            strategy="s",
            workers=1,
            status="finished",
            epochs=2,
            epoch_s=4.0,
            gpu_util=90.0,
            energy_wh=10.0,
            energy_j_per_sample=0.5,
            compute_percent=80.0,
            communication_percent=5.0,
        ),
        Point(
            run_id="b",
            strategy="s",
            workers=2,
            status="finished",
            epochs=4,
            epoch_s=2.5,
            gpu_util=70.0,
            energy_wh=12.0,
            energy_j_per_sample=0.6,
            compute_percent=60.0,
            communication_percent=25.0,
            communication_overlap=0.4,
        ),
    ]
    table = build_table(pts)
    a, b = table.rows
    assert a.energy_wh_per_epoch == pytest.approx(5.0) and b.energy_wh_per_epoch == pytest.approx(
        3.0
    )
    # 25 % communication, 40 % of it hidden under compute: 15 points exposed; device compute 60.
    assert b.exposed_communication_percent == pytest.approx(
        15.0
    ) and b.compute_percent == pytest.approx(60.0)
    assert b.other_percent == pytest.approx(25.0) and b.communication_overlap == pytest.approx(0.4)
    assert a.exposed_communication_percent == pytest.approx(
        5.0
    ) and a.other_percent == pytest.approx(15.0)
    assert b.efficiency == pytest.approx(4.0 / 2.5 / 2)
    assert "no GPU data" not in b.notes and "no trace data" not in b.notes
    assert table.notes == [
        (
            "no price: pass --instance-type to `advisor scale` or --price-per-hour "
            "to `advisor report` for samples per dollar"
        )
    ]


def test_host_compute_share_that_counts_collectives():
    # On CPU, XProf's host compute share (92 %) includes the collectives' time: 70 % of the step
    # is communication, 10 % of it overlapped, so 63 points are exposed and 29 are computation.
    pt = Point(
        run_id="c",
        strategy="multiworker",
        workers=2,
        status="finished",
        epochs=1,
        epoch_s=1.0,
        compute_percent=92.0,
        compute_includes_communication=True,
        communication_percent=70.0,
        communication_overlap=0.1,
    )
    (row,) = build_table([pt]).rows
    assert row.exposed_communication_percent == pytest.approx(63.0)
    assert row.compute_percent == pytest.approx(29.0) and row.other_percent == pytest.approx(8.0)


def test_killed_run_is_a_failure_not_a_point(tmp_path):
    root = tmp_path / "runs"
    path = write_run(
        root,
        "k",
        sweep_id="s",
        strategy="mirrored",
        workers=1,
        epochs=[1.0],
        samples_per_epoch=64,
        steps_per_epoch=1,
        status="running",
    )
    assert RunReader(path).read().status in ("running", "killed")
    points, failures = RunService(root).points(root, "s")
    assert points == [] and failures[0].run_id == "k"


def test_the_table_recommends_and_carries_the_sweeps_d6_findings(tmp_path):
    # jax scales badly: ×2 takes 7 s an epoch against 8 s at ×1 (57% efficiency, D652 fails).
    for workers, epoch, ranks in ((1, 8.0, 1), (2, 7.0, 2)):
        write_run(
            tmp_path,
            f"sw-jax-n{workers}",
            sweep_id="sw",
            strategy="jax",
            workers=workers,
            manifest_strategy="DataParallel",
            epochs=[9.0, epoch],
            samples_per_epoch=4096 // workers,
            steps_per_epoch=64 // workers,
            ranks=ranks,
            price_per_hour=1.0,
        )
    table = RunService(tmp_path).scaling_table("sw")
    fastest = next(r for r in table.recommendations if r.goal == "samples_per_s")
    assert (fastest.strategy, fastest.workers) == ("jax", 2)
    d652 = [f for f in table.findings if f.code == "D652"]
    assert [(f.strategy, f.workers, f.run_id) for f in d652] == [("jax", 2, "sw-jax-n2")]
    assert d652[0].evidence["scaling.efficiency"] == pytest.approx(8.0 / 7.0 / 2)
    assert "D652" in fastest.findings  # the recommended configuration's own findings
    from advisor.render.scaling import render_table

    text = render_table(table, "text")
    assert "D6 findings of the sweep" in text and "D652 poor-scaling-efficiency" in text
    # One run for the configuration: its id, as the Markdown report gives it (it once read as
    # console markup and vanished, leaving "on jax ×2 : …").
    head = "D652 poor-scaling-efficiency (warning) on jax ×2 [sw-jax-n2]"
    assert f"  {head}: " in text and " : " not in text
    assert f"**{head}**: " in render_table(table, "md")


def test_goodput_is_the_mean_over_a_configurations_runs_that_have_a_budget(tmp_path):
    common = {
        "sweep_id": "g",
        "strategy": "mirrored",
        "samples_per_epoch": 64,
        "steps_per_epoch": 1,
    }
    write_run(tmp_path, "g-n1-r0", workers=1, epochs=[1.0, 1.0], extra=[budget(0.5)], **common)
    write_run(tmp_path, "g-n1-r1", workers=1, epochs=[1.0, 1.0], extra=[budget(0.7)], **common)
    write_run(
        tmp_path, "g-n2-r0", workers=2, epochs=[1.0, 0.5], **common
    )  # trained without a budget
    write_run(tmp_path, "g-n4-r0", workers=4, epochs=[1.0, 0.3], extra=[budget(0.9)], **common)
    write_run(tmp_path, "g-n4-r1", workers=4, epochs=[1.0, 0.3], **common)
    table = RunService(tmp_path).scaling_table("g")
    assert table.row("mirrored", 1).goodput == pytest.approx(0.6)
    assert table.row("mirrored", 2).goodput is None  # unknown, not 0
    assert table.row("mirrored", 4).goodput == pytest.approx(
        0.9
    )  # the run without a budget does not count
    assert table.to_frame().attrs["units"]["goodput"] == "fraction"

    def report(fmt: str) -> str:
        result = CliRunner().invoke(
            cli, ["--runs-dir", str(tmp_path), "report", "g", "--format", fmt]
        )
        assert result.exit_code == 0, result.output
        return result.output

    lines = report("text").splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith("strategy") and "epoch time" in line
    )
    header = re.split(r"\s{2,}", lines[at].strip())
    cells = {
        row["workers"]: row
        for row in (
            dict(zip(header, re.split(r"\s{2,}", line.strip()))) for line in lines[at + 1 : at + 4]
        )
    }
    assert [cells[n]["goodput"] for n in ("1", "2", "4")] == ["60%", "n/a", "90%"]
    assert "| 64 | 60% |" in report("md")
    by_workers = {r["workers"]: r for r in csv.DictReader(io.StringIO(report("csv")))}
    assert (
        float(by_workers["1"]["goodput"]) == pytest.approx(0.6) and by_workers["2"]["goodput"] == ""
    )
    saved = tmp_path / "g.json"
    saved.write_text(report("json"))
    again = CliRunner().invoke(
        cli, ["report", str(saved), "--format", "csv"]
    )  # a saved report keeps it
    assert float(next(csv.DictReader(io.StringIO(again.output)))["goodput"]) == pytest.approx(0.6)


def test_the_fastest_recommendation_gives_speedup_and_efficiency_in_one_measure(sweep_dir):
    """mirrored ×4 against ×1: the table's epoch-time speedup (5.0 / 1.6 = 3.12×) and its efficiency
    (78%), named, not the samples/s ratio (1.31×: it counts the slow first epochs) beside an
    efficiency from the epoch times."""
    table = RunService(sweep_dir).scaling_table("sweep-fixture")
    fastest = next(r for r in table.recommendations if r.goal == "samples_per_s")
    m1, m4 = table.row("mirrored", 1), table.row("mirrored", 4)
    assert (fastest.strategy, fastest.workers) == ("mirrored", 4)
    assert m4.samples_per_s / m1.samples_per_s == pytest.approx(1.31, abs=0.01)  # the other measure
    assert "epoch-time speedup 3.12× over mirrored ×1, scaling efficiency 78%" in fastest.reason
    assert m4.speedup == pytest.approx(3.125) and m4.efficiency == pytest.approx(3.125 / 4)
    assert "1.31×" not in fastest.reason


def test_a_split_without_computation_is_not_projected(tmp_path):
    """A JAX trace that found no compute ops (0.0% computation at ×2 and ×4, as on a CPU host)
    gives no projection: "computation stays as measured at ×4 (0.0 ms)" would project a step of
    communication alone. The report says why in one line, in the text, Markdown and TUI notes."""
    from advisor.store.schema import FactsRecord

    for workers, compute in ((1, 45.0), (2, 0.0), (4, 0.0)):
        trace = FactsRecord(
            t=time.time(),
            source="trace",
            values={
                "trace.device_compute_percent": compute,
                "trace.communication_percent": 30.0 if workers > 1 else 0.0,
                "trace.communication_overlap": 0.0,
            },
        )
        write_run(
            tmp_path,
            f"z-jax-n{workers}",
            sweep_id="z",
            strategy="jax",
            workers=workers,
            manifest_strategy="DataParallel",
            epochs=[9.0, 8.0 / workers**0.5],
            samples_per_epoch=4096 // workers,
            steps_per_epoch=64 // workers,
            ranks=workers,
            extra=[trace],
        )
    table = RunService(tmp_path).scaling_table("z")
    assert [table.row("jax", n).compute_percent for n in (1, 2, 4)] == [45.0, 0.0, 0.0]
    assert (table.row("jax", 4).step_ms or 0) > 0 and table.row("jax", 4).per_replica_batch
    assert [r.goal for r in table.recommendations] == ["samples_per_s"]  # no projection
    note = (
        "no projection for jax: the trace found no computation at ×2 and ×4 (0 ms of the step), "
        "so its step cannot be split to project a larger size"
    )
    assert note in table.notes
    from advisor.render.scaling import render_table

    text = render_table(table, "text")
    assert "stays as measured" not in text and f"  {note}" in text
    assert f"- {note}" in render_table(table, "md")


def test_each_configuration_shows_its_fraction_of_speed_of_light(tmp_path):
    """The chief's measured fraction of speed of light, averaged over the repeats, per row: a
    column of the report (two significant digits) and a fraction in the frame."""
    from advisor.store.schema import ContextRecord

    def ceiling(flops_per_sample: float) -> ContextRecord:
        values = {
            "model.flops_per_sample": flops_per_sample,
            "speed_of_light.dtype": "float32",
            "speed_of_light.device": "cpu",
            "speed_of_light.tflops_float32": 0.1,
        }
        return ContextRecord(t=time.time(), values=values)

    common = {"sweep_id": "s", "strategy": "mirrored", "samples_per_epoch": 640}
    # 640 samples an epoch of 1 s: 640 samples/s; at 1e6 FLOPs a sample, 6.4e8 FLOP/s of 1e11
    write_run(tmp_path, "s-n1-r0", workers=1, epochs=[1.0, 1.0], steps_per_epoch=10,
              extra=[ceiling(1e6)], **common)  # fmt: skip
    write_run(tmp_path, "s-n2-r0", workers=2, epochs=[1.0, 1.0], steps_per_epoch=10, **common)
    table = RunService(tmp_path).scaling_table("s")
    one = table.row("mirrored", 1).speed_of_light
    assert one == pytest.approx(640 * 1e6 / 1e11, rel=0.05)
    assert table.row("mirrored", 2).speed_of_light is None  # not measured: unknown, not 0
    assert table.to_frame().attrs["units"]["speed_of_light"] == "fraction"
    result = CliRunner().invoke(cli, ["--runs-dir", str(tmp_path), "report", "s"])
    assert result.exit_code == 0, result.output
    assert "speed of light" in result.output and f"{100 * one:.2g}%" in result.output
