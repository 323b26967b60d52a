"""`advisor check --baseline RUN` and `--history`, `advisor history`: exit codes and formats, on
runs written by the real writer with exact figures (comparison_runs; no training)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from comparison_runs import write_run

from advisor.cli.main import cli

DATA = Path(__file__).parents[1] / "data"
HOOK = "part.callback.Logger.on_train_batch_end"


def advisor(store: Path, *args: str):
    return CliRunner().invoke(cli, ["--runs-dir", str(store), *args])


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "base")
    write_run(root, "same")
    write_run(root, "slow-hook", callback_ms=1.5)  # +1.4 ms of a 10.1 ms step: +14 %
    write_run(root, "busy", step_ms=13.0, others_cpu=0.4)  # slower steps, a busier host
    write_run(root, "slow-steps", step_ms=13.0)  # slower steps, the host alike
    write_run(root, "short", epochs=1)  # two windows: too few for an interval
    (tmp_path / "empty.toml").write_text("")
    return root


def check(store: Path, run: str, *args: str):
    config = ["--config", str(store.parent / "empty.toml"), "--select", "P702"]
    return advisor(store, "check", run, "--baseline", "base", *config, *args)


@pytest.mark.parametrize(
    ("run", "code", "verdict"),
    [
        ("same", 0, "no regression"),
        ("slow-hook", 1, "regression"),
        ("slow-steps", 1, "regression"),
        ("busy", 0, "contention"),
        ("short", 3, "not judgeable"),
    ],
)
def test_verdicts_and_exit_codes(store, run, code, verdict):
    result = check(store, run, "--format", "json")
    assert result.exit_code == code, result.output
    comparison = json.loads(result.stdout)["regression"]["comparison"]
    assert comparison["verdict"] == verdict


def test_not_judgeable_exits_3_unless_allowed_and_a_larger_limit_passes(store):
    assert check(store, "short", "--allow-incomplete").exit_code == 0
    assert check(store, "slow-hook", "--max-regression", "20").exit_code == 0
    assert check(store, "slow-hook", "--exit-zero").exit_code == 0


def test_text_names_the_hook_and_says_the_steps_are_unchanged(store):
    result = check(store, "slow-hook")
    text = " ".join(result.stdout.split())
    assert (
        "REGRESSION: `on_train_batch_end` of `Logger` +1.40 ms/step (+1400%), outside noise" in text
    )
    assert "the steps themselves unchanged" in text
    assert "Logger.on_train_batch_end: 0.1 → 1.5 ms/step" in text


def test_contention_is_said_with_its_figures(store):
    text = " ".join(check(store, "busy").stdout.split())
    assert (
        "other processes took 40% of the host's CPU during this run, 5% during the baseline" in text
    )


def test_github_annotation_carries_the_part(store):
    lines = check(store, "slow-hook", "--format", "github").stdout.splitlines()
    (error,) = [line for line in lines if line.startswith("::error")]
    assert "`on_train_batch_end` of `Logger`" in error and "(slow-hook vs base)" in error
    warning = check(store, "short", "--format", "github").stdout
    assert "::warning title=performance comparison (short)::not judgeable" in warning


def test_sarif_carries_the_part_and_validates(store):
    result = check(store, "slow-hook", "--format", "sarif")
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads((DATA / "sarif-schema-2.1.0.json").read_text()))
    (found,) = [r for r in document["runs"][0]["results"] if r["ruleId"] == "regression"]
    assert found["properties"]["part"] == HOOK and found["level"] == "error"


def test_junit_has_a_test_case_per_part_and_fails_the_one_that_regressed(store):
    root = ET.fromstring(check(store, "slow-hook", "--format", "junit").stdout)
    suite = root.find("testsuite[@name='advisor.slow-hook.versus.base']")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert {"samples/s", "the steps themselves", "Logger.on_train_batch_end"} <= set(cases)
    assert cases["Logger.on_train_batch_end"].find("failure") is not None
    assert cases["the steps themselves"].find("failure") is None
    assert cases["samples/s"].find("failure") is not None  # -12 %, outside noise
    assert suite.get("failures") == "2"


def test_json_report_with_a_comparison_validates_against_the_schema(store):
    schema = json.loads(advisor(store, "schema").stdout)
    jsonschema.Draft202012Validator(schema).validate(
        json.loads(check(store, "busy", "--format", "json").stdout)
    )


def _series(root: Path, steps_at: int | None = 10, n: int = 14) -> None:
    for i in range(n):
        slow = steps_at is not None and i >= steps_at
        write_run(
            root,
            f"s{i:02d}",
            name="nightly",
            callback_ms=1.5 if slow else 0.1,
            tags={"commit": f"c{i:02d}"},
            t0=1_790_000_000.0 + 60 * i,
        )


def test_history_lists_points_and_finds_the_change(tmp_path):
    _series(tmp_path / "runs")
    result = advisor(tmp_path / "runs", "history", "--name", "nightly", "--group-by", "commit")
    assert result.exit_code == 0, result.output
    assert "History of name=nightly, one point per commit: 14 point(s)" in result.stdout
    assert (
        "Logger.on_train_batch_end (ms/step) +1400.0% at c10 (point 10, after c09)" in result.stdout
    )
    data = json.loads(
        advisor(tmp_path / "runs", "history", "--name", "nightly", "--format", "json").stdout
    )
    changes = [c for c in data["changes"] if c["metric"] == HOOK]
    assert [(c["index"], c["before_n"], c["after_n"]) for c in changes] == [(10, 10, 4)]
    assert [(c["before_label"], c["label"]) for c in changes] == [("s09", "s10")]
    assert changes[0]["confidence"] > 0.999 and changes[0]["step_share_pct"] > 10


def test_history_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    _series(tmp_path / "runs")
    out = tmp_path / "history.png"
    result = advisor(tmp_path / "runs", "history", "--name", "nightly", "--plot", str(out))
    assert result.exit_code == 0 and out.stat().st_size > 1000


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tag", "commit"], "expected KEY=VALUE"),
        (["--name", "nobody"], "no runs with name=nobody"),
        (["--group-by", "branch"], "no runs with name=nightly and a branch tag"),
        (["--last", "0"], "0 is not in the range x>=1"),
    ],
)
def test_history_usage_errors_exit_2(tmp_path, args, needle):
    _series(tmp_path / "runs", n=3)
    result = advisor(tmp_path / "runs", "history", *args)
    assert result.exit_code == 2 and needle in result.output


def test_check_history_gates_on_the_latest_change_point(tmp_path):
    root = tmp_path / "runs"
    _series(root)
    (tmp_path / "e.toml").write_text("")
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    slow = advisor(
        root, "check", "s13", "--history", "--group-by", "commit", *config, "--format", "github"
    )
    assert slow.exit_code == 1
    assert "::error title=history gate (s13%2C name=nightly)::latest change point" in slow.stdout
    hook = "`on_train_batch_end` of `Logger`"
    assert f"latest change point: {hook} at c10, after c09 (+13.9%25 of a step" in slow.stdout
    # before the change, the history up to that run is flat; a short one gates nothing
    assert advisor(root, "check", "s09", "--history", *config).exit_code == 0
    short = advisor(root, "check", "s03", "--history", *config)
    assert short.exit_code == 0 and "TOO SHORT TO JUDGE: 4 point(s)" in short.stdout
    assert advisor(root, "check", "s13", "--group-by", "commit", *config).exit_code == 2


def test_a_run_outside_its_grouped_history_is_a_usage_error_not_a_gate_of_the_others(tmp_path):
    root = tmp_path / "runs"
    _series(root)  # slower from s10 on
    write_run(root, "untagged", name="nightly", t0=1_790_000_000.0 + 60 * 20)  # fixed, no commit
    (tmp_path / "e.toml").write_text("")
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    result = advisor(root, "check", "untagged", "--history", "--group-by", "commit", *config)
    assert result.exit_code == 2
    assert (
        "--history: run untagged is not in the history of name=nightly: it has no commit tag"
        in result.output
    )


def test_every_rate_and_part_says_the_smallest_change_the_pair_could_detect(store):
    text = " ".join(check(store, "slow-hook").stdout.split())
    assert "-12.2% [-13.9%, -10.4%], slower (detectable ±2.1%)" in text
    assert "(+13.9% of a step; detectable ±0.5% of a step)" in text
    comparison = json.loads(check(store, "same", "--format", "json").stdout)["regression"][
        "comparison"
    ]
    figures = comparison["rates"] + comparison["parts"]
    judged = [f for f in figures if f["verdict"] not in ("too few", "one measurement")]
    assert judged and all(f["detectable_pct"] is not None for f in judged)


def test_findings_that_appeared_or_disappeared_are_listed(store):
    config = ["--config", str(store.parent / "empty.toml"), "--select", "C460"]
    new = advisor(store, "check", "slow-hook", "--baseline", "base", *config)  # C460 fails: 13 %
    assert "findings new in this run: C460" in new.stdout
    gone = advisor(store, "check", "base", "--baseline", "slow-hook", *config, "--format", "json")
    comparison = json.loads(gone.stdout)["regression"]["comparison"]
    assert (comparison["appeared"], comparison["disappeared"]) == ([], ["C460"])


def test_a_run_compared_with_itself_is_a_usage_error(store):
    result = check(store, "base")  # --baseline base
    assert result.exit_code == 2
    assert "--baseline base is the run being checked (base): compare with another run" in (
        result.output
    )


def test_a_missing_baseline_run_is_one_line_and_exit_2(store):
    result = advisor(store, "check", "same", "--baseline", "nope")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no run 'nope'" in result.output


def test_a_store_of_one_run_has_a_history_of_one_point_and_a_gate_too_short_to_judge(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "only", name="solo")
    (tmp_path / "e.toml").write_text("")
    shown = advisor(root, "history")
    assert shown.exit_code == 0 and "History of name=solo, one point per run: 1 point(s)" in (
        shown.stdout
    )
    assert "No change points." in shown.stdout
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    gate = advisor(root, "check", "only", "--history", *config)
    assert gate.exit_code == 0
    assert "TOO SHORT TO JUDGE: 1 point(s) in the history of name=solo: at least 6" in gate.stdout


def test_the_history_gate_in_sarif_and_junit_carries_the_part(tmp_path):
    root = tmp_path / "runs"
    _series(root)
    (tmp_path / "e.toml").write_text("")
    args = [
        "check",
        "s13",
        "--history",
        "--group-by",
        "commit",
        "--config",
        str(tmp_path / "e.toml"),
    ]
    sarif = json.loads(advisor(root, *args, "--select", "P702", "--format", "sarif").stdout)
    jsonschema.validate(sarif, json.loads((DATA / "sarif-schema-2.1.0.json").read_text()))
    (found,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "regression"]
    assert found["properties"]["part"] == HOOK and found["level"] == "error"
    assert "at c10, after c09" in found["message"]["text"]
    root_xml = ET.fromstring(advisor(root, *args, "--select", "P702", "--format", "junit").stdout)
    (case,) = [c for c in root_xml.iter("testcase") if c.get("name") == "history of name=nightly"]
    assert "`on_train_batch_end` of `Logger` at c10" in case.find("failure").get("message")


def test_runs_that_ran_differently_are_compared_and_say_so(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "base", backend="tensorflow")
    write_run(root, "other", batch=128, backend="jax")  # twice the samples per step
    (tmp_path / "e.toml").write_text("")
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    result = advisor(root, "check", "other", "--baseline", "base", *config)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert (
        "the runs differ in what they ran: backend tensorflow → jax; global batch size 64 → 128 "
        "(a change may come from that)"
    ) in text
    as_json = advisor(root, "check", "other", "--baseline", "base", *config, "--format", "json")
    comparison = json.loads(as_json.stdout)["regression"]["comparison"]
    assert comparison["differences"] == ["backend tensorflow → jax", "global batch size 64 → 128"]
    assert comparison["rates"][0]["verdict"] == "faster"


def test_a_pair_too_noisy_to_rule_out_the_size_that_matters_exits_3_and_says_what_it_can_detect(
    tmp_path,
):
    root = tmp_path / "runs"
    wild = (1.0, 0.6, 1.4, 0.8, 1.25, 0.7, 1.3, 0.9, 1.1, 0.75)  # windows ±40 %: a busy host
    write_run(root, "base", spread=wild)
    write_run(root, "noisy", spread=tuple(reversed(wild)))
    (tmp_path / "e.toml").write_text("")
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    result = advisor(root, "check", "noisy", "--baseline", "base", *config)
    assert result.exit_code == 3, result.output
    text = " ".join(result.stdout.split())
    assert "NOT JUDGEABLE: samples/s" in text and "within noise, but the interval reaches" in text
    assert "this pair can detect changes of" in text and "or more, not 5%" in text
    allowed = advisor(root, "check", "noisy", "--baseline", "base", *config, "--allow-incomplete")
    assert allowed.exit_code == 0
