"""The "where the time went" table: one row per category with a bar, input wait inside the steps,
and the costliest hooks and saves."""

from __future__ import annotations

from rich.console import Console

from advisor.render.goodput import bar, goodput_parts


def _render(parts) -> str:
    console = Console(width=120, record=True, color_system=None)
    for part in parts:
        console.print(part)
    return console.export_text()


def test_bar_is_proportional_in_eighths():
    assert bar(0.0) == "" and bar(1.0, width=4) == "████"
    assert bar(0.5, width=4) == "██" and bar(1 / 8, width=4) == "▌" and bar(1 / 16, width=4) == "▎"


def test_the_table_lists_the_categories_and_the_costliest_hooks():
    facts = {
        "goodput": 0.5,
        "time.wall_seconds": 20.0,
        "time.final": True,
        "time.table": [
            {
                "category": "train_steps",
                "label": "training steps",
                "seconds": 10.0,
                "share": 0.5,
                "part_of": None,
            },
            {
                "category": "input_wait",
                "label": "waiting for input, inside the training steps (baseline)",
                "seconds": 2.0,
                "share": 0.1,
                "part_of": "train_steps",
            },
            {
                "category": "callbacks",
                "label": "callbacks (other than checkpoints)",
                "seconds": 8.0,
                "share": 0.4,
                "part_of": None,
            },
            {
                "category": "profile",
                "label": "profile",
                "seconds": 0.0,
                "share": 0.0,
                "part_of": None,
            },
        ],
        "callbacks.table": [
            {
                "name": "Logger",
                "hook": "on_train_batch_end",
                "seconds": 8.0,
                "share": 0.4,
                "calls": 1000,
                "ms_per_step": 8.0,
                "kind": "callback",
            }
        ],
        "checkpoint.count": 3,
        "checkpoint.seconds": 0.6,
        "checkpoint.bytes": 3e6,
        "checkpoint.by": "ModelCheckpoint.on_epoch_end ×3",
    }
    text = _render(goodput_parts(facts))
    assert "20.0 s of fit, goodput 50%" in text
    assert "training steps" in text and "50.0%" in text
    assert "  waiting for input, inside the training steps" in text  # indented: a part of the steps
    assert "profile" not in text  # nothing spent there
    assert (
        "Logger.on_train_batch_end: 8.00 s (8.00 ms per step, 40.0% of the fit) in 1,000 calls"
        in text
    )
    assert (
        "checkpoints: 3 saves in 0.60 s, 3.0 MB written (ModelCheckpoint.on_epoch_end ×3)" in text
    )


def test_no_budget_prints_nothing():
    assert goodput_parts({"goodput": None}) == []
