"""The property tests draw under the suite's Hypothesis profile (tests/conftest.py,
``ADVISOR_HYPOTHESIS``; docs/testing.md): every ``@given`` test sets only its number of examples,
through ``examples(n)`` or ``fuzz_examples(deep)``; two runs draw the same examples whatever code
the process loaded before (Hypothesis mixes constants of loaded modules into its draws, so the
tests that ran before changed what a later test drew); and the redaction property holds when
those constants are mixed in (it once drew ``password`` for the key ``password=``)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
COUNTS = {"examples", "fuzz_examples"}
PROFILES = {"register_profile", "load_profile"}  # settings.…
SEEDS = {"seed", "reproduce_failure"}  # hypothesis's decorators


def _name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _property_tests() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                _name(d) == "given" for d in node.decorator_list
            ):
                found.append((str(path.relative_to(ROOT)), node))
    return found


def test_every_property_test_sets_only_its_number_of_examples():
    tests = _property_tests()
    assert len(tests) >= 15  # the fault properties and the redaction property
    wrong = []
    for path, test in tests:
        settings = [d for d in test.decorator_list if _name(d) == "settings"]
        ok = len(settings) == 1 and isinstance(settings[0], ast.Call) and not settings[0].args
        keywords = settings[0].keywords if ok else []  # type: ignore[union-attr]
        ok = ok and [k.arg for k in keywords] == ["max_examples"]
        ok = ok and isinstance(keywords[0].value, ast.Call) and _name(keywords[0].value) in COUNTS
        if not ok:
            wrong.append(f"{path}::{test.name}")
    assert wrong == [], "give only @settings(max_examples=examples(n) or fuzz_examples(n))"


def test_no_test_file_chooses_a_profile_or_a_seed_of_its_own():
    chosen = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == TESTS / "conftest.py":
            continue
        tree = ast.parse(path.read_text())
        from_hypothesis = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hypothesis")
            for alias in node.names
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _name(node)
            profile = isinstance(node.func, ast.Attribute) and name in PROFILES
            if profile or (isinstance(node.func, ast.Name) and name in from_hypothesis & SEEDS):
                chosen.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert chosen == []


# Draws the redaction property's generator under the suite's profile. ``more``: modules full of
# string constants loaded first (as earlier tests of a run load them); ``constants``: the same,
# with Hypothesis's constant mixing kept, and the redaction property tests run on those draws.
DRAWS = """
import json, sys
sys.path[:0] = [{tests!r}, {support!r}, {store!r}]
mode = sys.argv[1]
if mode in ("more", "constants"):
    import advisor.cli, advisor.diagnosis.rules, advisor.store.reader, advisor.launch.slurm
    import advisor.store.redact
if mode == "constants":
    from hypothesis.internal.conjecture import providers
    keep = providers._get_local_constants
import conftest  # the suite's profile, as pytest loads it
if mode == "constants":
    providers._get_local_constants = keep
from hypothesis import given, settings
import test_redact_everywhere as redaction

drawn = []

@settings(max_examples=300)
@given(pair=redaction.named(), context=redaction.contexts)
def draw(pair, context):
    drawn.append([pair[1], context])

draw()
if mode == "constants":
    for name in dir(redaction):
        if name.startswith("test_") and hasattr(getattr(redaction, name), "hypothesis"):
            getattr(redaction, name)()
print(json.dumps(drawn))
"""


def _draws(tmp_path: Path, mode: str) -> list[list[str]]:
    script = tmp_path / "draws.py"
    script.write_text(
        textwrap.dedent(
            DRAWS.format(
                tests=str(TESTS), support=str(TESTS / "support"), store=str(TESTS / "store")
            )
        )
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "ADVISOR_HYPOTHESIS"}
    done = subprocess.run(
        [sys.executable, str(script), mode],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.slow  # starts three Python processes
@pytest.mark.long  # CI's own step: the README's command is near its budget
def test_two_runs_draw_the_same_examples_and_the_redaction_holds_on_constants(tmp_path):
    plain = _draws(tmp_path, "plain")
    assert len(plain) == 300 and len({value for value, _ in plain}) > 100
    # other code loaded first (other tests before this one): the same draws
    assert _draws(tmp_path, "more") == plain
    # with the loaded code's constants mixed in, the draws change (words of the advisor's own
    # code are drawn), and every redaction property still holds on them
    mixed = _draws(tmp_path, "constants")
    assert mixed != plain, "constants no longer reach the draws: this check proves nothing"
    assert not any(value.lower() in context.lower() for value, context in mixed)
    # no example database (Hypothesis keeps only caches there: its charmap, the constants)
    assert not (tmp_path / ".hypothesis" / "examples").exists()
