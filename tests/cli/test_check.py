"""`advisor check` and friends on runs written by the real writer (no training needed):
selection, configuration precedence, fail levels, exit codes, the regression gate, formats."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from advisor.cli.main import cli
from advisor.store.schema import ContextRecord, EpochRecord, WindowRecord
from advisor.store.writer import RunWriter

DATA = Path(__file__).parents[1] / "data"
CONTEXT = {
    "context.run_eagerly": False,
    "context.early_stopping": True,
    "context.tracking": True,
    "context.tuner": True,
    "context.profiling_configured": True,
    "context.graph_retraces": 0,
    "throughput.logging": True,
}

from advisor.diagnosis import load_rules as _load_rules

N_RULES = len(_load_rules())


def make_run(
    store: Path, name: str, *, samples: int = 6400, price: float | None = 2.0, **context
) -> Path:
    """A finished run: 1 warm-up + 4 windows of 2 s, 100 steps each, one epoch, a context record."""
    w = RunWriter(
        store,
        run_id=name,
        manifest={
            "global_batch_size": 64,
            "price_per_hour": price,
            "price_source": "argument" if price else None,
        },
    )
    t = time.time()
    w.write(ContextRecord(t=t, values={**CONTEXT, **context}))
    for i in range(5):
        w.write(
            WindowRecord(
                t=t + i,
                epoch=0,
                seconds=2.0,
                steps=100,
                samples=samples,
                step_begin=i * 100,
                step_end=(i + 1) * 100,
                warmup=i == 0,
            )
        )
    w.write(
        EpochRecord(
            t=t + 6, epoch=0, seconds=10.0, train_seconds=10.0, steps=500, samples=5 * samples
        )
    )
    w.close()
    return w.path


def check(*args: str, cwd: Path | None = None):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(cli, ["check", *args])
    with runner.isolated_filesystem(temp_dir=cwd):
        return runner.invoke(cli, ["check", *args])


@pytest.fixture
def store(tmp_path):
    return tmp_path / "runs"


def test_exit_codes_and_fail_levels(store, tmp_path):
    eager = make_run(store, "eager", **{"context.run_eagerly": True})
    clean = make_run(store, "clean")
    no_tuner = make_run(store, "notuner", **{"context.tuner": False})
    cfg = ["--config", str(tmp_path / "none.toml")]
    (tmp_path / "none.toml").write_text("")
    assert check(str(eager), "--select", "C450", *cfg).exit_code == 1
    assert check(str(eager), "--select", "C450", "--fail-on", "error", *cfg).exit_code == 1
    assert check(str(eager), "--select", "C450", "--exit-zero", *cfg).exit_code == 0
    assert check(str(clean), "--select", "C450", *cfg).exit_code == 0
    # P702 is info: below the default fail level (warning), failing at --fail-on info
    assert check(str(no_tuner), "--select", "P702", *cfg).exit_code == 0
    assert check(str(no_tuner), "--select", "P702", "--fail-on", "info", *cfg).exit_code == 1
    result = check(str(no_tuner), "--select", "P702", "--fail-on", "info", "--format", "json", *cfg)
    report = json.loads(result.stdout)
    assert [f["code"] for f in report["findings"]] == ["P702"]
    assert report["settings"]["fail_on"] == "info"


def test_selection_by_prefix_and_ignore(store, tmp_path):
    run = make_run(store, "sel")
    (tmp_path / "empty.toml").write_text("")
    result = check(
        str(run),
        "--select",
        "G5,P70",
        "--ignore",
        "G55",
        "--ignore",
        "P702",
        "--format",
        "json",
        "--config",
        str(tmp_path / "empty.toml"),
    )
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert codes == {
        "G501",
        "G502",
        "G503",
        "G504",
        "G505",
        "G506",
        "G560",
        "P701",
        "P703",
        "P704",
    }
    result = check(
        str(run),
        "--select",
        "G5",
        "--extend-select",
        "M101",
        "--ignore",
        "G5",
        "--format",
        "json",
        "--config",
        str(tmp_path / "empty.toml"),
    )
    assert {f["code"] for f in json.loads(result.stdout)["findings"]} == {"M101"}


def test_config_file_and_command_line_precedence(store, tmp_path):
    run = make_run(store, "cfg", **{"context.run_eagerly": True, "context.graph_retraces": 3})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.advisor]\nselect = ["C4"]\nignore = ["C450"]\nfail-on = "error"\n\n'
        "[tool.advisor.thresholds.C451]\nmax_retraces = 5\n"
    )

    def codes(result):
        assert result.exit_code in (0, 1), result.output
        return {f["code"]: f["status"] for f in json.loads(result.stdout)["findings"]}

    # found by searching upwards from the working directory
    found = codes(check(str(run), "--format", "json", cwd=tmp_path))
    assert "C450" not in found and found["C451"] == "pass" and "M101" not in found
    # --select replaces the file's selection (and its ignores); --threshold beats the file
    found = codes(
        check(
            str(run),
            "--select",
            "C450,C451",
            "--threshold",
            "C451.max_retraces=2",
            "--format",
            "json",
            cwd=tmp_path,
        )
    )
    assert found == {"C450": "fail", "C451": "fail"}
    # fail-on from the file (error), then overridden by the command line
    assert check(str(run), "--extend-select", "C450", cwd=tmp_path).exit_code == 1
    assert (
        check(
            str(run), "--select", "C451", "--threshold", "C451.max_retraces=2", cwd=tmp_path
        ).exit_code
        == 0
    )
    assert (
        check(
            str(run),
            "--select",
            "C451",
            "--threshold",
            "C451.max_retraces=2",
            "--fail-on",
            "warning",
            cwd=tmp_path,
        ).exit_code
        == 1
    )


@pytest.mark.parametrize(
    "toml,needle",
    [
        ('[tool.advisor]\nfail-on = "fatal"\n', "fail-on must be one of"),
        ('[tool.advisor]\nselect = ["Z9"]\n', "'Z9' matches no rule code"),
        ("[tool.advisor.thresholds.Z999]\nx = 1\n", "unknown rule code 'Z999'"),
        (
            "[tool.advisor.thresholds.C451]\nmax_retrace = 1\n",
            "C451 has no parameter 'max_retrace'",
        ),
        ('[tool.advisor.thresholds.C451]\nmax_retraces = "many"\n', "must be a number"),
        ("[tool.advisor\n", "invalid TOML"),
    ],
)
def test_bad_configuration_exits_2(store, tmp_path, toml, needle):
    run = make_run(store, "bad")
    config = tmp_path / "pyproject.toml"
    config.write_text(toml)
    result = check(str(run), "--config", str(config))
    assert result.exit_code == 2
    assert (
        needle in result.output
        and "pyproject.toml" in result.output
        and "Traceback" not in result.output
    )


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--select", "Q1"], "'Q1' matches no rule code"),
        (["--threshold", "C451"], "expected CODE.name=value"),
        (["--max-regression", "5"], "--max-regression needs --baseline"),
        (["--format", "xml"], "Invalid value"),
    ],
)
def test_usage_errors_exit_2(store, tmp_path, args, needle):
    run = make_run(store, "usage")
    (tmp_path / "e.toml").write_text("")
    result = check(str(run), *args, "--config", str(tmp_path / "e.toml"))
    assert result.exit_code == 2 and needle in result.output


def test_missing_run_exits_2(store, tmp_path):
    make_run(store, "present")
    result = CliRunner().invoke(cli, ["--runs-dir", str(store), "check", "absent"])
    assert result.exit_code == 2 and "no run 'absent'" in result.output
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "empty-store")])
    assert result.exit_code == 2


def test_regression_gate(store, tmp_path):
    base = make_run(store, "base", samples=6400)  # 3200 samples/s
    slower = make_run(store, "slower", samples=6000)  # 3000 samples/s: -6.25%
    config = ["--config", str(tmp_path / "e.toml"), "--select", "P702"]
    (tmp_path / "e.toml").write_text("")
    assert (
        check(str(slower), "--baseline", str(base), "--max-regression", "10", *config).exit_code
        == 0
    )
    result = check(
        str(slower), "--baseline", str(base), "--max-regression", "5", "--format", "json", *config
    )
    assert result.exit_code == 1
    regression = json.loads(result.stdout)["regression"]
    assert regression["failed"] is True
    metrics = {m["name"]: m for m in regression["metrics"]}
    assert metrics["throughput.samples_per_s"]["change_pct"] == pytest.approx(-6.25)
    assert metrics["cost.samples_per_dollar"]["regressed"] is True
    assert (
        check(
            str(slower), "--baseline", str(base), "--max-regression", "5", "--exit-zero", *config
        ).exit_code
        == 0
    )
    result = CliRunner().invoke(
        cli,
        [
            "--runs-dir",
            str(store),
            "check",
            "slower",
            "--baseline",
            "base",
            "--max-regression",
            "5",
            *config,
        ],
    )
    assert result.exit_code == 1 and "REGRESSION" in result.stdout
    # a faster run never regresses; a baseline without throughput cannot gate
    assert (
        check(str(base), "--baseline", str(slower), "--max-regression", "0", *config).exit_code == 0
    )
    empty = RunWriter(store, run_id="empty", manifest={})
    empty.close()
    result = check(str(slower), "--baseline", str(empty.path), *config)
    assert result.exit_code == 2 and "samples/s is not measured" in result.output


def test_runs_dir_checks_every_run(store, tmp_path):
    make_run(store, "one")
    make_run(store, "two", **{"context.run_eagerly": True})
    (tmp_path / "e.toml").write_text("")
    result = check(
        str(store), "--select", "C450", "--format", "json", "--config", str(tmp_path / "e.toml")
    )
    assert result.exit_code == 1
    reports = json.loads(result.stdout)
    assert sorted(r["run"]["run_id"] for r in reports) == ["one", "two"]


def test_formats_are_valid(store, tmp_path):
    run = make_run(store, "fmt", **{"context.run_eagerly": True, "context.tuner": False})
    (tmp_path / "e.toml").write_text("")
    cfg = ["--config", str(tmp_path / "e.toml")]
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    report = json.loads(check(str(run), "--format", "json", *cfg).stdout)
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["schema_version"] == 1 and len(report["findings"]) == N_RULES
    sarif_schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    out = tmp_path / "out.sarif"
    assert check(str(run), "--format", "sarif", "-o", str(out), *cfg).exit_code == 1
    sarif = json.loads(out.read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    assert "C450" in {r["ruleId"] for r in sarif["runs"][0]["results"]}
    junit = ET.fromstring(check(str(run), "--format", "junit", *cfg).stdout)
    assert junit.tag == "testsuites" and int(junit.get("tests")) == N_RULES
    assert any(case.find("failure") is not None for case in junit.iter("testcase"))
    github = check(str(run), "--format", "github", *cfg).stdout
    assert github.startswith("::error title=C450 eager-execution")
    text = check(str(run), *cfg).stdout
    assert "C450" in text and "Checklist coverage" in text and "\x1b[" not in text


def test_export_rule_rules_schema(store, tmp_path):
    make_run(store, "exp")
    out = tmp_path / "report.json"
    (tmp_path / "e.toml").write_text("")
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--runs-dir",
            str(store),
            "export",
            "exp",
            "-o",
            str(out),
            "--config",
            str(tmp_path / "e.toml"),
        ],
    )
    assert result.exit_code == 0, result.output
    schema = json.loads(runner.invoke(cli, ["schema"]).stdout)
    jsonschema.Draft202012Validator(schema).validate(json.loads(out.read_text()))
    assert schema["properties"]["schema_version"]["const"] == 1

    page = runner.invoke(cli, ["rule", "M108"]).stdout
    for heading in (
        "# M108 input-bound",
        "## What it checks",
        "## Why it matters",
        "## How to fix",
        "## References",
    ):
        assert heading in page
    assert (
        json.loads(runner.invoke(cli, ["rule", "input-bound", "--format", "json"]).stdout)["code"]
        == "M108"
    )
    missing = runner.invoke(cli, ["rule", "M1088"])
    assert missing.exit_code == 2 and "did you mean" in missing.output

    listed = runner.invoke(cli, ["rules", "--format", "json"]).stdout
    assert len(json.loads(listed)) == N_RULES
    g5 = runner.invoke(cli, ["rules", "--section", "g5"]).stdout
    assert f"11 of {N_RULES} rules" in g5 and "G551" in g5 and "G560" in g5 and "M101" not in g5
    errors = json.loads(
        runner.invoke(cli, ["rules", "--severity", "error", "--format", "json"]).stdout
    )
    assert errors == []  # escalation to error is per finding, not a rule default
