"""What a scaling table recommends: the best configuration per goal and a labelled projection.

Points with numbers chosen by hand, so that every recommendation can be checked by hand.
"""

from __future__ import annotations

import json

import pytest

from advisor.analysis.scaling import Point, ScalingTable, build_table
from advisor.analysis.scaling_advice import recommend
from advisor.render.scaling import render_table


def _point(
    strategy: str,
    workers: int,
    step_s: float,
    *,
    price: float | None = 1.0,
    compute: float | None = None,
    comm: float | None = None,
    overlap: float | None = None,
    energy: float | None = None,
) -> Point:
    batch = 64.0 * workers
    return Point(
        run_id=f"{strategy}-{workers}",
        strategy=strategy,
        workers=workers,
        status="finished",
        epochs=1,
        epoch_s=100 / workers * step_s,
        samples_per_s=batch / step_s,
        step_s=step_s,
        global_batch=batch,
        per_replica_batch=64.0,
        replicas=workers,
        price_per_hour=price,
        compute_percent=compute,
        communication_percent=comm,
        communication_overlap=overlap,
        energy_j_per_sample=energy,
        gpu_present=energy is not None,
    )


@pytest.fixture
def table() -> ScalingTable:
    points = [
        # mirrored: 10 ms steps at 1 replica; at 4 the step grows to 12.5 ms (80% efficiency).
        _point("mirrored", 1, 0.010, compute=95.0, comm=0.0, energy=2.0),
        _point("mirrored", 2, 0.011, compute=90.0, comm=10.0, overlap=0.5, energy=2.1),
        _point("mirrored", 4, 0.0125, compute=80.0, comm=20.0, overlap=0.5, energy=2.4),
        # horovod: slower steps, cheaper energy per sample.
        _point("horovod", 1, 0.012, compute=95.0, comm=0.0, energy=1.5),
        _point("horovod", 2, 0.020, compute=60.0, comm=40.0, overlap=0.0, energy=1.9),
    ]
    return build_table(points, "sweep test")


def test_best_configuration_per_goal(table):
    recs = {r.goal: r for r in recommend(table)}
    fastest = recs["samples_per_s"]
    assert (fastest.strategy, fastest.workers) == ("mirrored", 4)
    assert fastest.value == pytest.approx(256 / 0.0125) and fastest.unit == "samples/s"
    assert "scaling efficiency 80%" in fastest.reason and "next best" in fastest.reason
    # Mirrored replicas share one instance (one process), so ×4 costs what ×1 costs and is cheapest.
    cheapest = recs["samples_per_dollar"]
    assert (cheapest.strategy, cheapest.workers) == ("mirrored", 4)
    assert cheapest.value == max(r.samples_per_dollar for r in table.rows)
    energy = recs["energy"]
    assert (energy.strategy, energy.workers, energy.value) == ("horovod", 1, 1.5)
    assert not any(r.projected for r in (fastest, cheapest, energy))


def test_projection_of_the_next_worker_count_is_labelled_with_its_assumptions(table):
    projection = next(r for r in recommend(table) if r.goal == "projection")
    assert projection.projected and (projection.strategy, projection.workers) == ("mirrored", 8)
    # At ×4: 12.5 ms = 10 ms computation + 1.25 ms exposed communication (20% of it, half hidden)
    # + 1.25 ms other. At ×8 a ring all-reduce sends 2·7/8 ÷ 2·3/4 = 7/6 as much.
    step = 10.0 + 1.25 * 7 / 6 + 1.25
    assert projection.value == pytest.approx(8 * 64 / (step / 1000))
    assert projection.unit == "samples/s" and "projected" in projection.reason
    text = " | ".join(projection.assumptions)
    assert (
        "per-replica batch stays 64" in text
        and "ring all-reduce" in text
        and "no new bottleneck" in text
    )


def test_goals_without_measurements_are_left_out():
    points = [_point("mirrored", n, 0.01 * n, price=None) for n in (1, 2)]
    recs = recommend(build_table(points))
    assert [r.goal for r in recs] == ["samples_per_s"]  # no price, no energy, no trace split


def test_rendered_in_every_format(table):
    table.recommendations = recommend(table)
    text = render_table(table, "text")
    assert "Recommendations" in text and "fastest (samples/s): mirrored ×4" in text
    assert "PROJECTION, not measured: mirrored ×8" in text and "assumptions:" in text
    md = render_table(table, "md")
    assert "## Recommendations" in md and "**PROJECTION, not measured: mirrored ×8**" in md
    lines = render_table(table, "csv").splitlines()
    header = lines[0].split(",")
    assert header[-2:] == ["recommended", "projected"]
    assert (
        "samples_per_s" in lines[3]
        and lines[-1].startswith("mirrored,8,")
        and lines[-1].endswith("true")
    )
    saved = ScalingTable.from_dict(json.loads(render_table(table, "json")))
    assert [(r.goal, r.projected) for r in saved.recommendations] == [
        (r.goal, r.projected) for r in table.recommendations
    ]
