"""advisor.bounded_reads: the bounded reads that the store and the diagnosis share. A rule file or a
config that is a FIFO, a device, too large, not UTF-8 or missing is one error naming the file."""

from __future__ import annotations

import os
import threading

import pytest

from advisor.bounded_reads import read_text
from advisor.errors import ConfigError, RuleError


def test_a_fifo_rule_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "m1.yaml"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_text(fifo, 100, RuleError)
        except RuleError as exc:
            result.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "opening a FIFO blocked"
    assert result and str(result[0]) == f"{fifo}: not a regular file (a FIFO); refused"


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"x" * 101, "larger than 100 bytes; refused"),
        (b"ok \xff", "not UTF-8 text (byte 3)"),
    ],
)
def test_a_bad_file_is_one_error_of_the_callers_type_naming_it(tmp_path, content, reason):
    path = tmp_path / "advisor.toml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        read_text(path, 100, ConfigError)
    assert str(caught.value) == f"{path}: {reason}"


def test_missing_devices_and_nul_bytes_are_refused(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(RuleError, match="a character device"):
        read_text(tmp_path / "zero", 1 << 20, RuleError)
    with pytest.raises(RuleError, match=r"missing\.yaml: cannot read \(no such file"):
        read_text(tmp_path / "missing.yaml", 100, RuleError)
    with pytest.raises(RuleError, match="cannot read"):
        read_text(str(tmp_path / "a\x00b"), 100, RuleError)


def test_a_file_at_the_limit_is_read(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("é" * 50, encoding="utf-8")
    assert read_text(path, 100, RuleError) == "é" * 50
