"""The summariser on the committed fixture (a real CPU profile taken with plain tf.profiler).

The fixture is made by tests/data/traces/make_fixture.py: 30 marked steps of a tiny model whose
input pipeline sleeps in a tf.py_function. Nothing here needs TensorFlow; XProf's converter runs.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

pytest.importorskip("xprof")

from click.testing import CliRunner

from advisor.analysis.facts.trace import summary_facts
from advisor.cli.main import cli
from advisor.errors import TraceError
from advisor.store.trace_summary import SUMMARY_NAME, TraceSummary, load_summary, save_summary
from advisor.traces.summarize import find_xplanes, summarize

pytestmark = pytest.mark.slow  # XProf's converter runs in a child process

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "traces" / "input_bound"
XPLANE = next(FIXTURE.rglob("*.xplane.pb"))


def _listing(folder: Path) -> dict[str, tuple[int, float]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime) for p in folder.rglob("*")
    }


@pytest.fixture(scope="module")
def summary() -> TraceSummary:
    return summarize(FIXTURE)


def test_fixture_is_summarised_as_input_bound(summary):
    assert summary.hosts == ["fixture"] and summary.hardware == "CPU_ONLY"
    assert 20 <= summary.steps <= 30  # XProf drops steps cut by the capture's edges
    assert summary.step_time_ms_mean and summary.step_time_ms_mean > 5  # the 8 ms sleep per batch
    assert summary.input_percent is not None and summary.input_percent > 50
    assert summary.input_classification == "HOST"
    assert "input-bound" in (summary.input_statement or "")
    shares = summary.breakdown_percent
    assert abs(sum(shares.values()) - 100.0) < 1.0
    assert summary.py_func_ops == ["EagerPyFunc"]
    top_types = [op.type for op in summary.top_ops]
    assert len(summary.top_ops) == 10 and "EagerPyFunc" in top_types[:3]
    assert all(op.where == "host" for op in summary.top_ops)
    assert summary.communication_percent == 0.0 and summary.collective_ops == []


def test_cpu_profile_has_no_device_side_numbers(summary):
    # XProf writes zeros for these on CPU; a zero that was never measured must not become a fact.
    for field in (
        "device_compute_percent",
        "device_idle_percent",
        "h2d_percent",
        "d2h_percent",
        "compute_16bit_percent",
        "kernel_launch_percent",
        "top_ops_host",
    ):
        assert getattr(summary, field) is None, field
    facts = summary_facts(summary)
    assert "trace.device_idle_percent" not in facts and "trace.h2d_percent" not in facts
    assert facts["trace.present"] is True and facts["trace.py_func"] is True
    assert facts["trace.input_percent"] > 50 and facts["trace.steps_marked"] is True
    assert facts["trace.top_ops"][0].keys() == {"name", "type", "where", "self_percent"}


def test_summary_round_trips_through_json(summary, tmp_path):
    path = save_summary(summary, tmp_path)
    assert path.name == SUMMARY_NAME
    again = load_summary(path)
    assert again == summary
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(TraceError, match="bad.json"):
        load_summary(tmp_path / "bad.json")


def test_file_session_and_logdir_paths_agree(summary, tmp_path):
    assert find_xplanes(XPLANE) == [XPLANE]
    assert find_xplanes(XPLANE.parent) == [XPLANE]
    # A log directory with an older session too: the newest session is read.
    logdir = tmp_path / "logs"
    shutil.copytree(FIXTURE, logdir)
    older = logdir / "plugins" / "profile" / "2025_01_01_00_00_00"
    older.mkdir()
    (older / "old.xplane.pb").write_bytes(b"x")
    assert [p.name for p in find_xplanes(logdir)] == ["fixture.xplane.pb"]
    assert summarize(XPLANE).steps == summary.steps


def test_read_only_profile_folder_is_never_written(tmp_path):
    folder = tmp_path / "ro"
    shutil.copytree(FIXTURE, folder)
    before = _listing(folder)
    for p in [folder, *folder.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        result = summarize(folder)
    finally:
        for p in [folder, *folder.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    assert result.steps > 0
    assert _listing(folder) == before  # no caches, no summary written beside a foreign profile


def test_saving_where_it_cannot_write_is_a_trace_error(summary, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(TraceError, match="cannot write the summary"):
        save_summary(summary, blocker)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "not a readable XProf profile"),  # truncated copy of the real fixture
        (b"this is not a protobuf at all\n" * 10, "not a readable XProf profile"),
        (b"", "empty"),
    ],
    ids=["truncated", "not-xplane", "empty-file"],
)
def test_bad_files_give_one_line_errors(tmp_path, content, message):
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(
        XPLANE.read_bytes()[: XPLANE.stat().st_size // 3] if content is None else content
    )
    with pytest.raises(TraceError, match=message) as info:
        summarize(bad)
    assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_empty_folder_and_wrong_file_type(tmp_path):
    with pytest.raises(TraceError, match="no \\*.xplane.pb profile"):
        summarize(tmp_path)
    other = tmp_path / "events.out.tfevents"
    other.write_text("x")
    with pytest.raises(TraceError, match="not an XProf profile"):
        summarize(other)
    with pytest.raises(TraceError, match="no such file"):
        summarize(tmp_path / "missing")


def test_converter_time_and_memory_limits_stop_it_cleanly():
    with pytest.raises(TraceError, match="longer than 0.05 s"):
        summarize(FIXTURE, timeout_s=0.05)
    with pytest.raises(TraceError, match="memory"):
        summarize(FIXTURE, memory_mb=64)


def test_cli_prints_text_and_json(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["trace", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    assert "steps found" in result.output and "EagerPyFunc" in result.output
    assert "input classification HOST" in result.output
    result = runner.invoke(cli, ["trace", str(XPLANE), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["py_func_ops"] == ["EagerPyFunc"] and payload["steps"] > 0
    assert not list(XPLANE.parent.glob(SUMMARY_NAME))  # printing writes nothing beside the profile


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    (tmp_path / "x.xplane.pb").write_bytes(b"garbage")
    result = CliRunner().invoke(cli, ["trace", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith("advisor: error:") and "Traceback" not in result.output
    assert os.fspath(tmp_path) in result.output


GPU_OUTPUTS = FIXTURE.parent / "gpu_h200_jax"


def test_gpu_profile_with_command_buffers_takes_device_ops_from_the_timeline():
    # XProf's tables and our timeline analysis (events.json) of a real H200 profile, made by
    # scripts/gpu_trace_check.sh (Keras on JAX, float32). JAX runs each step as a CUDA command
    # buffer, so XProf's op table has no device rows and no idle or 16-bit numbers.
    tools = {p.stem: p.read_text() for p in GPU_OUTPUTS.glob("*.json")}
    from advisor.traces.summarize import build_summary

    s = build_summary(tools, [Path("h200.xplane.pb")])
    assert s.hardware == "GPU" and s.on_device and s.steps >= 20
    assert s.device_compute_percent is not None and 20 < s.device_compute_percent < 50
    events = json.loads(tools["events"])
    assert s.device_idle_percent == pytest.approx(100.0 - events["device_busy_percent"])
    assert s.h2d_percent == pytest.approx(events["h2d_percent"]) and s.d2h_percent is not None
    assert s.compute_16bit_percent is None  # XProf said 0 % without the data to say it
    assert any("16-bit share of compute unknown" in n for n in s.notes)
    device_ops = [op for op in s.top_ops if op.where == "device"]
    assert len(device_ops) >= 5 and any("gemm" in op.name for op in device_ops)
    assert [op.type for op in s.top_ops if op.where == "host"] == [
        "GetEventForComputeStreamSyncPoint"
    ]
    assert s.top_ops_host == 0  # a PJRT host callback is runtime plumbing, not a CPU fallback
    facts = summary_facts(s)
    assert facts["trace.hardware"] == "GPU" and facts["trace.top_ops_host"] == 0
    assert facts["trace.kernel_launch_percent"] == 0.0  # measured on a GPU profile
    assert "trace.compute_16bit_percent" not in facts


def test_attach_to_a_killed_run_and_refuse_a_running_one(tmp_path):
    from advisor.analysis.facts.trace import derive
    from advisor.analysis.registry import NO_CONTEXT
    from advisor.store.reader import RunReader
    from advisor.store.writer import RunWriter
    from advisor.traces.attach import attach

    writer = RunWriter(tmp_path, run_id="live")
    with pytest.raises(TraceError, match="still being written"):
        attach(FIXTURE, writer.path)
    writer.close()
    worker = writer.path / "worker-0.jsonl"
    with open(worker, "a", encoding="utf-8") as fh:
        fh.write('{"type":"window","t":1,"epo')  # a killed writer's last, cut line
    record, summary = attach(FIXTURE, writer.path)
    run = RunReader(writer.path).read()  # the cut line is gone, the new record reads back
    assert run.of_type(type(record))[-1].summary == record.summary
    facts = derive(run, {}, NO_CONTEXT)
    assert facts["trace.present"] is True and facts["trace.steps"] == summary.steps
    assert (writer.path / record.path / "fixture.xplane.pb").is_file()
