"""Resuming a sweep (no processes): which configurations are kept and which run again, where an
earlier attempt is set aside, the command-line inputs a resume takes from the sweep, and the
refusals. The real sweep preempted by SIGTERM and resumed is in test_preempted_sweep.py."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.errors import UsageError
from advisor.launch.plan import make_plan
from advisor.launch.resume import recorded_inputs, resume
from advisor.launch.sweep import new_record
from advisor.store.schema import MANIFEST_NAME
from advisor.store.sweep import read_sweep, sweep_dir, write_sweep

CMD = ["python", "train.py"]


def _sweep(runs, statuses, command=CMD):
    """A sweep of single ×1, ×2, ×3 whose configurations ended as ``statuses`` say; a finished or
    preempted one has a run directory (with a manifest) and a log directory."""
    plan = make_plan(command, [1, 2, 3], ["single"], sweep_id="sw")
    record = new_record(plan, "local", 60.0, None)
    for config, rec, status in zip(plan.configs, record.configs, statuses):
        rec.status = status
        if status == "failed":
            rec.reason = "preempted: its run was terminated (SIGTERM) at 10:00:00 before it ended"
        if status in ("finished", "failed"):
            (runs / rec.run_id).mkdir(parents=True)
            (runs / rec.run_id / MANIFEST_NAME).write_text("{}")
            logs = sweep_dir(runs, "sw") / "logs" / config.label
            logs.mkdir(parents=True)
            (logs / "worker-0.log").write_text("trained\n")
    write_sweep(runs, record)
    return plan, record


def test_finished_configurations_are_kept_and_the_others_set_aside(tmp_path):
    plan, record = _sweep(tmp_path, ["finished", "failed", "pending"])
    done = resume(record, plan, tmp_path, "local")
    assert [r.run_id for r in done.kept] == ["sw-single-n1-r0"]
    assert [c.label for c in done.plan.configs] == ["single-n2-r0", "single-n3-r0"]
    preempted = done.record.config("sw-single-n2-r0")
    assert preempted.status == "pending" and preempted.reason is None
    (attempt,) = preempted.attempts
    assert attempt.status == "failed" and attempt.reason.startswith("preempted:")
    moved = sweep_dir(tmp_path, "sw") / "attempts" / "1"
    assert attempt.moved_to == str(moved / "sw-single-n2-r0")
    assert not (tmp_path / "sw-single-n2-r0").exists()  # out of the store's listing
    assert (moved / "sw-single-n2-r0" / MANIFEST_NAME).is_file()
    assert (moved / "logs" / "single-n2-r0" / "worker-0.log").read_text() == "trained\n"
    assert done.record.config("sw-single-n3-r0").attempts == []  # never ran: nothing to keep
    assert (tmp_path / "sw-single-n1-r0" / MANIFEST_NAME).is_file()  # the kept run stays
    (said,) = done.record.resumed
    assert said.kept == ["sw-single-n1-r0"]
    assert said.rerun == ["sw-single-n2-r0", "sw-single-n3-r0"]
    lines = done.describe()
    assert "keeping 1 finished configuration(s), running 2 again" in lines[0]
    assert any("rerun single ×2 repeat 0 (preempted: its run" in line for line in lines)
    assert any("rerun single ×3 repeat 0 (never run)" in line for line in lines)


def test_a_finished_configuration_whose_run_is_gone_runs_again(tmp_path):
    plan, record = _sweep(tmp_path, ["finished", "finished", "finished"])
    (tmp_path / "sw-single-n3-r0" / MANIFEST_NAME).unlink()
    done = resume(record, plan, tmp_path, "local")
    assert [c.label for c in done.plan.configs] == ["single-n3-r0"]


def test_more_repeats_add_configurations(tmp_path):
    plan, record = _sweep(tmp_path, ["finished", "finished", "finished"])
    more = make_plan(CMD, [1, 2, 3], ["single"], repeat=2, sweep_id="sw")
    done = resume(record, more, tmp_path, "local")
    assert [c.label for c in done.plan.configs] == [f"single-n{n}-r1" for n in (1, 2, 3)]
    assert len(done.record.configs) == 6 and done.record.repeat == 2


def test_a_sweep_with_submitted_jobs_is_not_resumed(tmp_path):
    plan, record = _sweep(tmp_path, ["finished", "submitted", "pending"])
    record.configs[1].job_id = "12"
    with pytest.raises(UsageError, match=r"still submitted \(12\).*scancel"):
        resume(record, plan, tmp_path, "slurm")


def test_a_resume_takes_what_the_command_line_leaves_out_from_the_sweep(tmp_path):
    _sweep(tmp_path, ["finished", "failed", "pending"], command=["python", "t.py", "--epochs", "3"])
    got = recorded_inputs(tmp_path, "sw", ((), "1,2", (), 1), False, False)
    assert got == (("python", "t.py", "--epochs", "3"), "1,2,3", ("single",), 1)
    got = recorded_inputs(tmp_path, "sw", (("python", "u.py"), "2", (), 3), True, True)
    assert got == (("python", "u.py"), "2", ("single",), 3)


def test_a_command_recorded_with_hidden_secrets_must_be_given_again(tmp_path):
    _sweep(
        tmp_path, ["finished", "failed", "pending"], command=["python", "t.py", "--token=abcd1234"]
    )
    assert "***" in " ".join(read_sweep(sweep_dir(tmp_path, "sw")).command)
    with pytest.raises(UsageError, match="give the command again"):
        recorded_inputs(tmp_path, "sw", ((), "1", (), 1), False, False)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--resume", "--", "python", "t.py"], "--resume needs the --sweep-id"),
        (["--resume", "--sweep-id", "nope"], "no sweep nope in"),
        (["--sweep-id", "sw", "--", "python", "t.py"], "already exists.*--resume"),
    ],
)
def test_resume_usage_errors_are_one_line(tmp_path, args, said):
    _sweep(tmp_path, ["finished", "failed", "pending"])
    result = CliRunner().invoke(cli, ["--runs-dir", str(tmp_path), "scale", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert re.search(said, result.output), result.output


def test_resuming_a_sweep_with_nothing_left_to_run_only_reports(tmp_path):
    _sweep(tmp_path, ["finished", "finished", "finished"])
    before = json.loads((sweep_dir(tmp_path, "sw") / "sweep.json").read_text())
    result = CliRunner().invoke(
        cli, ["--runs-dir", str(tmp_path), "scale", "--sweep-id", "sw", "--resume", "--no-report"]
    )
    assert result.exit_code == 0, result.output
    assert "keeping 3 finished configuration(s), running 0 again" in result.output
    after = read_sweep(sweep_dir(tmp_path, "sw"))
    assert [c.status for c in after.configs] == [c["status"] for c in before["configs"]]
    assert len(after.resumed) == 1 and after.resumed[0].rerun == []
