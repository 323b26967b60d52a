"""The store's hard limits: what parse_json accepts, refuses and repairs; regular files only;
sizes, line lengths; paths from records kept inside their run."""

from __future__ import annotations

import os
import threading

import pytest

from advisor.store import limits
from advisor.store.limits import (
    BadInput,
    inside,
    iter_lines,
    load_json_file,
    parse_json,
    plain,
    read_limited,
)


def test_plain_documents_parse():
    assert parse_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert parse_json('{"name": "caf\\u00e9 \\ud83d\\ude00"}') == {
        "name": "café 😀"
    }  # a valid pair stays


@pytest.mark.parametrize(
    "text, reason",
    [
        ("[" * 40 + "]" * 40, "nested deeper than 32 levels"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 32 levels"),
        ('{"n": ' + "9" * 5000 + "}", "not JSON"),
        ('{"pid": ' + str(2**63) + "}", "integer out of range (19 digits)"),
        ('{"n": -' + str(2**70) + "}", "integer out of range"),
        ("{not json", "not JSON"),
    ],
)
def test_documents_that_break_a_limit_are_refused_with_the_reason(text, reason):
    with pytest.raises(BadInput, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_json(text.encode())


def test_largest_allowed_integer_and_nesting_pass():
    assert parse_json(str(2**63 - 1).encode()) == 2**63 - 1
    assert parse_json(("[" * 32 + "]" * 32).encode()) is not None


def test_non_finite_numbers_read_as_missing():
    assert parse_json(b'{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e999, "e": 1e308}') == {
        "a": None,
        "b": None,
        "c": None,
        "d": None,
        "e": 1e308,
    }


def test_lone_surrogates_become_the_replacement_character():
    assert parse_json(b'{"run\\ud800": "x\\udfffy"}') == {"run\ufffd": "x\ufffdy"}


def test_invalid_utf8_is_refused():
    with pytest.raises(BadInput, match="not UTF-8"):
        parse_json(b'{"a": "\xff"}')


@pytest.mark.parametrize(
    "raw, is_plain",
    [
        (b'{"type":"window","t":1.5,"steps":10}', True),
        (b'{"a": NaN}', False),
        (b'{"a": 1e400}', False),
        (b'{"a": 12345678901234567890}', False),
        (b'{"a": "\\u00e9"}', False),
        (b"[" * 40, False),
    ],
)
def test_plain_lines_are_recognised_in_c(raw, is_plain):
    assert plain(raw) is is_plain


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "worker-0.jsonl"
    os.mkfifo(fifo)
    result: list[object] = []

    def read() -> None:
        try:
            read_limited(fifo, 100)
        except BadInput as exc:
            result.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "opening a FIFO blocked"
    assert result and "not a regular file (a FIFO)" in str(result[0])


def test_devices_and_directories_are_refused(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(BadInput, match="a character device"):
        read_limited(tmp_path / "zero", 1 << 20)
    with pytest.raises(BadInput, match="a directory"):
        list(iter_lines(tmp_path))


def test_sizes_are_limited(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{"a": "' + "x" * 2000 + '"}')
    with pytest.raises(BadInput, match="larger than 1000 bytes"):
        load_json_file(big, 1000)
    sparse = tmp_path / "worker-0.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(limits.MAX_RECORD_FILE_BYTES + 1)
    with pytest.raises(BadInput, match="larger than"):
        next(iter_lines(sparse))


def test_long_lines_are_skipped_not_kept_and_torn_last_lines_flagged(tmp_path):
    path = tmp_path / "worker-0.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 5000 + b'\n{"b": 2}\n{"c"')
    got = list(iter_lines(path, max_line=100))
    assert got == [
        (1, b'{"a": 1}', True),
        (2, None, True),
        (3, b'{"b": 2}', True),
        (4, b'{"c"', False),
    ]


def test_paths_from_records_stay_inside_the_run(tmp_path):
    run = tmp_path / "run"
    (run / "traces" / "a").mkdir(parents=True)
    assert inside(run, "traces/a") == (run / "traces" / "a").resolve()
    (run / "traces" / "out").symlink_to(tmp_path)
    for bad in ("../elsewhere", "/etc", "traces/../../x", "traces/out", "", "a\x00b"):
        with pytest.raises(BadInput):
            inside(run, bad)
