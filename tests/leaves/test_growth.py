"""advisor.growth: the steady-state rate of a per-epoch series, what it leaves out, and when
memory runs out at that rate (written series; the fits are in tests/collectors/test_memory.py)."""

from __future__ import annotations

import random

from advisor.growth import MB, analyse, attribute, deadline, describe, unbounded_cache


def series(values_mb):
    return list(range(len(values_mb))), [v * MB for v in values_mb]


def test_a_steady_leak_grows_at_its_rate():
    growth = analyse(*series([800 + 54 * i for i in range(10)]))
    assert growth is not None and growth.growing and not growth.filled
    assert abs(growth.rate_mb - 54) < 1e-6
    assert growth.first_epoch == 1 and "epoch 0" in growth.left_out


def test_a_cache_that_fills_then_stops_is_left_out_not_a_leak():
    readings = [886, 946, 1007, 1073, 1074, 1074, 1074.1, 1074, 1074.2, 1074.2]
    growth = analyse(*series(readings), "the input's in-memory cache() filling")
    assert growth is not None and not growth.growing and growth.filled
    assert growth.rate_mb < 1 and "cache() filling" in growth.left_out
    assert growth.first_epoch == 3


def test_a_few_kilobytes_an_epoch_after_the_fill_are_bookkeeping_not_growth():
    """A real cache_fills run: the cache fills over three epochs, then the process grows by 8 KB
    an epoch (History, logs, the advisor's readings) for 80 epochs — steadily, so outside its
    band, yet far below MIN_GROWTH_MB: no growth, and the filling is still left out."""
    flat = [1075.9 + 0.0078 * i for i in range(80)]
    growth = analyse(*series([897.8, 960.8, 1022.1, *flat]), "the input's cache() filling")
    assert growth is not None and not growth.growing and growth.filled
    assert "cache() filling" in growth.left_out


def test_noise_around_a_flat_line_is_not_growth():
    rng = random.Random(3)
    growth = analyse(*series([500 + rng.uniform(-3, 3) for _ in range(15)]))
    assert growth is not None and not growth.growing


def test_too_few_epochs_give_no_verdict_and_early_growth_is_not_yet_a_leak():
    assert analyse(*series([100, 150, 200, 250])) is None
    # growth in every epoch so far, but the last half has fewer than three differences
    early = analyse(*series([100, 150, 200, 250, 300, 350]))
    assert early is not None and not early.growing


def test_the_deadline_is_the_headroom_over_the_rate():
    due = deadline(50.0, 1000 * MB, last_epoch=9, epoch_seconds=36.0, planned_epochs=100)
    assert due is not None and abs(due.epochs_left - 20) < 1e-9 and abs(due.at_epoch - 29) < 1e-9
    assert abs(due.hours_left - 0.2) < 1e-9 and due.before_end is True
    later = deadline(50.0, 1000 * MB, last_epoch=9, epoch_seconds=None, planned_epochs=20)
    assert later is not None and later.before_end is False and later.hours_left is None
    assert deadline(50.0, 1000 * MB, 9, None, None).before_end is None
    assert deadline(-1.0, 1000 * MB, 9, None, 10) is None


def test_the_description_gives_rate_and_deadline():
    growth = analyse(*series([800 + 54 * i for i in range(10)]))
    due = deadline(growth.rate_mb, 20_000 * MB, 9, 1.5, 10_000)
    text = describe(growth, due, 1.5, 10_000)
    assert "54.0 ± 0.0 MB per epoch" in text and "GB/hour" in text
    assert "before the fit's 10000 epochs end" in text


def test_the_suspect_follows_where_memory_grows():
    assert "InMemorySnapshots" in attribute(500, 10, ["InMemorySnapshots"], [], loop=False)
    assert "between epochs" in attribute(500, 10, ["A"], [], loop=False)
    inside = attribute(10, 500, ["A"], ["B"], loop=False)
    assert "B" in inside and "training step" in inside
    assert "loop's own code" in attribute(0, 500, [], [], loop=True)


def test_an_unbounded_cache_is_named_when_no_callback_holds_the_growth():
    stages = [{"kind": "source"}, {"kind": "repeat", "count": -1}, {"kind": "cache"}]
    cache = unbounded_cache(stages)
    assert cache is not None and "cache() after repeat()" in cache
    assert attribute(10, 500, ["A"], ["B"], loop=False, cache=cache) == cache
    holder = [{"name": "Keeper", "mb": 400.0}]
    assert "Keeper" in attribute(10, 500, [], [], loop=False, hooks=holder, cache=cache)
    assert unbounded_cache([{"kind": "cache"}, {"kind": "repeat", "count": -1}]) is None
    assert unbounded_cache([{"kind": "repeat", "count": 2}, {"kind": "cache"}]) is None
    assert unbounded_cache([{"kind": "repeat"}, {"kind": "cache", "to_file": True}]) is None
    assert unbounded_cache(None) is None
