"""The facts of a run written from records: the analysis tests' one way to derive them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.analysis.registry import registry
from advisor.store.reader import RunReader
from advisor.store.writer import RunWriter


def derive(tmp_path: Path, *records: Any) -> Any:
    """The facts of a finished run of ``records`` (in time order: the reader skips one that goes
    back), none of them an error."""
    writer = RunWriter(tmp_path, "facts")
    for record in records:
        writer.write(record)
    writer.close("finished")
    facts, errors = registry().derive(RunReader(writer.path).read())
    assert not errors
    return facts
