"""Sweep files and trace summaries are read by one loader (``store.limits.load_versioned``): the
same one-line error, naming the file, for every way such a file can be wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import RunFormatError, TraceError
from advisor.store.sweep import SWEEP_SCHEMA_VERSION, SweepRecord, read_sweep
from advisor.store.trace_summary import SUMMARY_VERSION, TraceSummary, load_summary

KINDS = {  # reader, error class, version key, the version it knows, a valid payload
    "sweep": (
        read_sweep,
        RunFormatError,
        "schema_version",
        SWEEP_SCHEMA_VERSION,
        SweepRecord(sweep_id="s1", workers=[1, 2]).model_dump(mode="json"),
    ),
    "trace summary": (
        load_summary,
        TraceError,
        "summary_version",
        SUMMARY_VERSION,
        TraceSummary(steps=5, input_percent=12.5).model_dump(mode="json"),
    ),
}


def _write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "file.json"
    path.write_text(content)
    return path


@pytest.fixture(params=sorted(KINDS))
def kind(
    request: pytest.FixtureRequest,
) -> tuple[Callable[[Path], Any], type[Exception], str, int, dict[str, Any]]:
    return KINDS[request.param]


def test_a_valid_file_is_read_back(kind, tmp_path):
    read, _, _, _, payload = kind
    model = read(_write(tmp_path, json.dumps(payload)))
    assert model.model_dump(mode="json") == payload


@pytest.mark.parametrize(
    "content, said",
    [
        ("{not json", "unreadable"),
        ("[1, 2]", "not a JSON object"),
        ('{"%s": "2"}', "is not an integer"),
        ('{"%s": true}', "is not an integer"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(kind, tmp_path, content, said):
    read, error, key, _, _ = kind
    path = _write(tmp_path, content.replace("%s", key))
    with pytest.raises(error) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and said in message and "\n" not in message


def test_a_newer_version_is_refused_not_read_as_ours(kind, tmp_path):
    read, error, key, known, payload = kind
    path = _write(tmp_path, json.dumps({**payload, key: known + 1}))
    with pytest.raises(
        error,
        match=(
            rf"^{re.escape(str(path))}: written by a newer advisor "
            rf".*{key} {known + 1}\); upgrade advisor$"
        ),
    ):
        read(path)


def test_an_invalid_field_is_named(kind, tmp_path):
    read, error, _, _, payload = kind
    field = "workers" if "sweep_id" in payload else "steps"
    path = _write(tmp_path, json.dumps({**payload, field: "many"}))
    with pytest.raises(error, match=rf"^{re.escape(str(path))}: invalid .*\({field}"):
        read(path)
