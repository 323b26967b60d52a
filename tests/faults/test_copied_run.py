"""A run copied from another host is judged by the times written in it — never by the copy's
file times or by a pid that means something else on this machine."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from fault_helpers import cli

from advisor.store.reader import RunReader
from advisor.store.schema import WindowRecord
from advisor.store.status import STALE_AFTER_S
from advisor.store.writer import RunWriter


def _write_on_another_host(tmp_path: Path, close: bool, age_s: float) -> Path:
    """A run as another machine wrote it ``age_s`` seconds ago (its scope, hostname and pid are
    that machine's; unclosed, it has no end record, as if the job died there), copied here."""
    origin = tmp_path / "origin"
    writer = RunWriter(origin, run_id="elsewhere", manifest={"global_batch_size": 32})
    for i in range(4):
        writer.write(
            WindowRecord(
                t=time.time(),
                epoch=0,
                seconds=1.0,
                steps=10,
                samples=320,
                step_begin=10 * i,
                step_end=10 * (i + 1),
                warmup=i == 0,
            )
        )
    if close:
        writer.close()
    copy = tmp_path / "store" / "elsewhere"
    shutil.copytree(origin / "elsewhere", copy)  # fresh file times, as any copy has
    shift = time.time() - age_s

    def foreign(doc: dict) -> dict:
        if "scope" in doc:
            doc["scope"] = "0b5e55ed-0000-4000-8000-000000000000/pid:[4026531836]"
        if "hostname" in doc:
            doc["hostname"] = "gpu-node-17"
        if "pid" in doc:
            doc["pid"] = os.getpid()  # a live process here, but not the writer: must not count
        return doc

    records = [json.loads(line) for line in (copy / "worker-0.jsonl").read_text().splitlines()]
    records = [r for r in records if r["type"] != "heartbeat"]
    last = max(r["t"] for r in records)
    for r in records:
        r["t"] = r["t"] - last + shift
    (copy / "worker-0.jsonl").write_text("".join(json.dumps(foreign(r)) + "\n" for r in records))
    manifest = foreign(json.loads((copy / "run.json").read_text()))
    for key in ("created", "updated", "ended"):
        if manifest.get(key):
            manifest[key] = manifest[key] - last + shift
    (copy / "run.json").write_text(json.dumps(manifest))
    return copy


def _status(copy: Path) -> str:
    listed = json.loads(cli("--runs-dir", str(copy.parent), "runs", "--format", "json").stdout)
    return listed[0]["status"]


def test_a_killed_run_copied_from_another_host_is_killed_at_once(tmp_path):
    copy = _write_on_another_host(tmp_path, close=False, age_s=STALE_AFTER_S + 60)
    assert time.time() - copy.joinpath("worker-0.jsonl").stat().st_mtime < 60  # fresh copy
    assert RunReader(copy).read().status == "killed" and _status(copy) == "killed"
    result = cli("check", str(copy))
    assert result.exit_code == 3 and "the run was killed" in result.output


def test_a_live_run_on_another_host_is_running_while_its_heartbeat_is_fresh(tmp_path):
    copy = _write_on_another_host(tmp_path, close=False, age_s=5)
    run = RunReader(copy).read()
    assert run.status == "running"  # our pid answers kill(0), but it is not the writer's
    assert RunReader(copy).read(now=time.time() + STALE_AFTER_S + 10).status == "killed"
    result = cli("check", str(copy))
    assert result.exit_code == 3 and "still running" in result.output


@pytest.mark.parametrize("age_s", [5, 3600])
def test_a_finished_run_copied_from_another_host_is_finished(tmp_path, age_s):
    copy = _write_on_another_host(tmp_path, close=True, age_s=age_s)
    assert RunReader(copy).read().status == "finished" and _status(copy) == "finished"
    assert cli("check", str(copy)).exit_code in (0, 1)
