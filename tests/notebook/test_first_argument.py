"""The frames take the store first, like the callback and ``advisor.RunService``; the older calls
that gave the run first still work, with one DeprecationWarning (no pandas needed here)."""

from __future__ import annotations

import inspect
import warnings

import pytest

import advisor
from advisor import notebook as frames


def test_every_frame_takes_the_store_first():
    for fn in (advisor.runs_frame, advisor.findings_frame, advisor.epochs_frame):
        assert next(iter(inspect.signature(fn).parameters)) == "runs_dir", fn.__name__


@pytest.mark.parametrize(
    ("value", "is_run"),
    [
        ("latest", True),
        ("~2", True),
        ("run-20261204-abc", True),
        (["a", "b"], True),
        (("a",), True),
        ("s3://bucket/runs", False),
        (None, False),
    ],
)
def test_what_counts_as_a_run_reference(value, is_run):
    assert frames.is_run_reference(value) is is_run


def test_a_folder_is_a_store_unless_it_holds_run_json(tmp_path):
    (tmp_path / "run-1").mkdir()
    assert frames.is_run_reference(tmp_path) is False
    assert frames.is_run_reference(tmp_path / "run-1") is False
    (tmp_path / "run-1" / "run.json").write_text("{}")
    assert frames.is_run_reference(tmp_path / "run-1") is True


def test_the_older_run_first_calls_still_work_and_warn_once(tmp_path):
    calls = []

    @frames.run_first_still_works("run")
    def frame(runs_dir=None, run=None, *, store=None):
        calls.append((runs_dir, run))

    frames._warned_run_first.discard("frame")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame(tmp_path, "latest")  # the store first: as written
        frame(runs_dir=tmp_path, run="a")  # keywords: as written
        frame(tmp_path)  # a store folder alone: the store
        frame("latest")  # older: the run alone
        frame("b", runs_dir=tmp_path)  # older: the run, the store by keyword
    assert calls == [
        (tmp_path, "latest"),
        (tmp_path, "a"),
        (tmp_path, None),
        (None, "latest"),
        (tmp_path, "b"),
    ]
    deprecations = [w for w in caught if w.category is DeprecationWarning]
    assert len(deprecations) == 1 and "the store comes first" in str(deprecations[0].message)
    assert deprecations[0].filename == __file__
    assert frame.__name__ == "frame" and list(inspect.signature(frame).parameters) == [
        "runs_dir",
        "run",
        "store",
    ]
