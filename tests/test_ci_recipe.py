"""docs/ci.md's GitHub Actions workflow, run here: every `run:` step but install and download.

A push to `main` stores its report; pull requests are checked against it. The steps' commands are
read from the page, so the page and what is tested cannot drift apart.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = {
    "install": "the suite runs in an environment where the advisor is installed",
    "baseline": "downloads an artifact from GitHub with gh; the test puts the stored report there",
}


def workflow() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("```yaml", 1)[1].split("```", 1)[0])


def condition(expr: str | None, github: dict[str, str]) -> bool:
    """The few `if:` forms the recipe uses: always(), and `github.X == 'v'` joined by &&."""
    if expr is None:
        return True
    result = True
    for term in (t.strip() for t in expr.split("&&")):
        if term == "always()":
            continue
        left, _, right = (part.strip() for part in term.partition("=="))
        assert left.startswith("github.") and right[:1] == right[-1:] == "'", (
            f"unsupported if: {expr!r}"
        )
        result = result and github[left.removeprefix("github.")] == right.strip("'")
    return result


def run_job(
    folder: Path, event: str, extra_env: dict[str, str]
) -> dict[str, subprocess.CompletedProcess]:
    """Run the job's steps in ``folder`` as GitHub would for ``event``: each step's result."""
    job = workflow()["jobs"]["advisor"]
    github = {
        "event_name": event,
        "ref": "refs/heads/main" if event == "push" else "refs/pull/1/merge",
    }
    env = {
        **os.environ,
        **{k: str(v) for k, v in job["env"].items()},
        **extra_env,
        "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
        "CI": "true",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    done: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for step in job["steps"]:
        if failed and "always()" not in str(step.get("if")):
            continue  # after a failed step only `if: always()` steps run, as on GitHub
        if "run" not in step or step.get("id") in NOT_RUN or not condition(step.get("if"), github):
            continue
        step_env = {
            **env,
            **{k: str(v) for k, v in (step.get("env") or {}).items() if "${{" not in str(v)},
        }
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=folder,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        done[step["id"]] = result
        failed = failed or (result.returncode != 0 and not step.get("continue-on-error"))
    return done


def checkout(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(ROOT / "examples" / "ci", folder / "examples" / "ci")
    return folder


def test_the_recipe_names_every_step_it_needs():
    steps = workflow()["jobs"]["advisor"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    for command in (
        "advisor check latest --format github",
        "--baseline baseline/advisor-report.json",
        "--history --group-by git_sha",
        "advisor history --name ci --group-by git_sha",
        "--format sarif -o advisor.sarif",
        "--format junit -o advisor-junit.xml",
        "advisor export latest -o advisor-report.json",
    ):
        assert command in runs
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("github/codeql-action/upload-sarif") for u in uses)
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    assert any(u.startswith("actions/cache/restore") for u in uses)
    assert any(u.startswith("actions/cache/save") for u in uses)
    assert set(NOT_RUN) <= {s.get("id") for s in steps}


@pytest.mark.long  # minutes with a core busy: CI's own step (docs/testing.md)
def test_main_stores_its_report_and_pull_requests_are_gated_against_it(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    # A push to main whose input is slow (20 ms a batch, one after the other: more than a step
    # takes even on a busy host, so the input sets the pace): its report becomes the baseline.
    main = checkout(tmp_path, "main")
    steps = run_job(main, "push", {"CI_SLOW_INPUT_MS": "20"})
    assert steps["train"].returncode == 0, steps["train"].stderr[-2000:]
    assert steps["check"].returncode == 0, steps["check"].stdout + steps["check"].stderr
    assert "::" in steps["check"].stdout and "checklist coverage" in steps["check"].stdout
    assert steps["reports"].returncode == 0, steps["reports"].stderr
    sarif = json.loads((main / "advisor.sarif").read_text())
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    suites = ET.parse(main / "advisor-junit.xml").getroot()
    assert suites.iter("testcase") and int(suites.get("tests", "0")) > 0
    stored = json.loads((main / "advisor-report.json").read_text())
    assert stored["facts"]["throughput.samples_per_s"]["value"] > 0
    # one run (the store's dotfiles, such as the speed-of-light cache, are not runs)
    (run_dir,) = [p for p in (main / "advisor-runs").iterdir() if not p.name.startswith(".")]
    assert stored["run"]["run_id"] == run_dir.name and "-ci-" in run_dir.name
    assert stored["run"]["tags"]["git_sha"] == "0123456789ab"  # the history's point per commit
    assert "History of name=ci, one point per git_sha: 1 point(s)" in steps["check"].stdout

    def pull_request(name: str, slow_ms: str) -> dict[str, subprocess.CompletedProcess]:
        folder = checkout(tmp_path, name)
        (folder / "baseline").mkdir()  # where `gh run download` puts the artifact
        shutil.copy(main / "advisor-report.json", folder / "baseline" / "advisor-report.json")
        return run_job(folder, "pull_request", {"CI_SLOW_INPUT_MS": slow_ms})

    # The two pull requests run side by side, as two GitHub jobs would (in folders of their own;
    # each starts TensorFlow, several seconds here). Neither verdict comes near the 10 % gate when
    # they share the cores: without the slow input the pull request trains at CPU speed, more than
    # twice main's pace (main waits 20 ms a batch) even on a loaded machine, and 40 ms a batch
    # holds the other to at most half of main's pace, however busy the machine.
    with ThreadPoolExecutor(max_workers=2) as jobs:
        started = [
            jobs.submit(pull_request, "pr-faster", "0"),
            jobs.submit(pull_request, "pr-slower", "40"),
        ]
        faster, slower = (job.result() for job in started)
    # A pull request that removes the slow input: faster than main, the gate passes.
    assert faster["check"].returncode == 0, faster["check"].stdout + faster["check"].stderr
    assert "::error" not in faster["check"].stdout
    # A pull request that doubles the input's delay (40 ms a batch): the gate fails on samples/s.
    assert slower["check"].returncode == 1, slower["check"].stdout + slower["check"].stderr
    errors = [line for line in slower["check"].stdout.splitlines() if line.startswith("::error")]
    assert any("samples/s" in line or "samples_per_s" in line for line in errors), slower[
        "check"
    ].stdout
    assert slower["reports"].returncode == 0, "the reports run after a failed gate (if: always())"
    assert (tmp_path / "pr-slower" / "advisor.sarif").is_file()
