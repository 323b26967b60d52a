"""README's two fresh-machine commands stay first, and CI runs exactly the test command."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def test_readme_starts_with_demo_and_test_commands():
    demo, tests = readme_commands()[:2]
    assert demo.endswith("advisor demo")
    assert "pytest" in tests


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in [line.strip() for line in ci]


def test_ci_runs_the_cluster_tests_the_readme_command_leaves_out():
    """pyproject's addopts leave the `cluster` and `long` tests out of the README's command; CI
    runs them in a step of its own, with the same extras, before that command (its summary stays
    the last line)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not cluster and not long'" in config["addopts"]
    assert any(m.startswith("cluster:") for m in config["markers"])
    assert any(m.startswith("long:") for m in config["markers"])
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    (step,) = [line for line in ci if line.endswith('python -m pytest -q -m "cluster or long"')]
    extras = readme_commands()[1].split('".[', 1)[1].split(']"', 1)[0]
    assert f'EXTRAS="{extras}"' in ci and '".[$EXTRAS]"' in step
    assert ci.index(step) < ci.index(readme_commands()[1])
