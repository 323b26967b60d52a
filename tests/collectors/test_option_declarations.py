"""Each option is declared once (advisor/collectors/option_registry.py); every other place naming
the options agrees with the declarations: the callback's signature and docstring, AdvisorOptions,
``advisor.track``/``TrackedRun``/``advisor.tracked``, docs/collectors.md and the demo command."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import typing
import warnings
from pathlib import Path

import pytest

import advisor
from advisor.collectors import option_docs
from advisor.collectors.option_registry import (
    BY_NAME,
    DEPRECATED,
    OPTION_NAMES,
    OPTIONS,
    RECORDED_AS,
)
from advisor.collectors.option_spec import WARNED
from advisor.collectors.options import AdvisorOptions
from advisor.experiments.settings import WhatIfPlan, parse_whatif
from advisor.tracking.run import TRACK_OPTIONS, TrackedRun

ROOT = Path(__file__).resolve().parents[2]
# the loop's own parameters, not options
LOOP_ONLY = ("batch_size", "backend", "model", "sample", "flops_per_sample")


def option_params(fn):
    return {
        name: p
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in ("self", "func")
    }


def test_the_table_is_well_formed():
    assert len(OPTIONS) == len(set(OPTION_NAMES)) > 30
    for option in OPTIONS:
        assert option.doc.strip() and option.type.strip(), option.name
        option.value(option.default)  # the default is valid
    assert set(DEPRECATED.values()) <= set(OPTION_NAMES)
    assert not set(DEPRECATED) & set(OPTION_NAMES)
    assert RECORDED_AS["goodput"] == "budget" and DEPRECATED["budget"] == "goodput"


def test_the_callback_signature_is_the_declarations():
    params = option_params(advisor.AdvisorCallback.__init__)
    assert tuple(params) == OPTION_NAMES
    for name, p in params.items():
        option = BY_NAME[name]
        assert p.default == option.default, name
        assert p.annotation == option.type, name
    assert "deprecated" in inspect.signature(advisor.AdvisorCallback.__init__).parameters


def test_advisor_options_fields_are_the_declarations():
    found = dataclasses.fields(AdvisorOptions)
    assert tuple(f.name for f in found) == OPTION_NAMES
    for f in found:
        option = BY_NAME[f.name]
        assert f.type == (option.stored or option.type), f.name
        assert option.value(f.default) == option.value(option.default), f.name


def test_track_tracked_and_trackedrun_take_a_subset_with_the_same_defaults_and_types():
    """``TrackedRun``'s signature is written once; ``track`` takes it (``inspect.signature``
    and type checkers see the same), and ``tracked``'s keyword overload lists it for IDEs."""
    run_params = option_params(TrackedRun.__init__)
    assert tuple(run_params) == TRACK_OPTIONS
    keyword_overload = typing.get_overloads(advisor.tracked)[1]
    for fn in (advisor.track, keyword_overload, TrackedRun.__init__):
        params = option_params(fn)
        assert list(params) == list(TRACK_OPTIONS), fn
        for name, p in params.items():
            if name in LOOP_ONLY:
                continue
            option = BY_NAME[name]
            assert p.default == option.default, (fn, name)
            assert p.annotation == option.type, (fn, name)


def test_the_options_are_passed_on_by_name_not_through_locals():
    """No ``locals()``; every pass-through of the loop's options names each option once, as
    ``name=name``."""
    for path in ("advisor/collectors", "advisor/tracking"):
        for file in (ROOT / path).rglob("*.py"):
            assert not re.search(r"\blocals\(\)", file.read_text(encoding="utf-8")), file
    wanted = set(TRACK_OPTIONS)
    for file, function in (("advisor/tracking/run.py", "__init__"),):
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        node = next(
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef)
            and n.name == function
            and not any(isinstance(d, ast.Name) and d.id == "overload" for d in n.decorator_list)
        )
        passed = {}
        for call in (c for c in ast.walk(node) if isinstance(c, ast.Call)):
            for kw in call.keywords:
                if kw.arg is not None and isinstance(kw.value, ast.Name):
                    passed.setdefault(kw.arg, kw.value.id)
            passed.update({a.id: a.id for a in call.args if isinstance(a, ast.Name)})
        given = {k for k, v in passed.items() if k == v}
        expected = wanted - ({"batch_size", "backend"} if function == "__init__" else set())
        assert expected <= given, (file, function, sorted(expected - given))


def test_the_callback_docstring_args_are_generated_from_the_declarations():
    doc = advisor.AdvisorCallback.__doc__
    assert option_docs.args_section() in doc
    for option in OPTIONS:
        assert f"        {option.name}: " in doc, option.name


def test_the_generated_blocks_are_up_to_date():
    assert option_docs.stale() == [], "run `python -m advisor.collectors.option_docs`"
    assert option_docs.main(["--check"]) == 0
    table = (ROOT / "docs" / "collectors.md").read_text(encoding="utf-8")
    for option in OPTIONS:
        assert f"| `{option.name}` |" in table


def test_the_demo_flags_mirror_declared_options():
    """``advisor demo --no-baseline/--no-whatif`` switch declared options off (None is off), and
    every option the demo sets is declared and valid."""
    from advisor.cli.demo import command

    flags = [p.name for p in command.params if p.name and p.name.startswith("no_")]
    assert flags == ["no_baseline", "no_whatif"]
    for flag in flags:
        option = BY_NAME[flag.removeprefix("no_")]
        assert option.value(None) is None
    tree = ast.parse((ROOT / "advisor/cli/demo.py").read_text(encoding="utf-8"))
    set_by_demo: dict[str, object] = {}
    for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call)):
        name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
        if name in ("update", "AdvisorCallback"):
            for kw in call.keywords:
                if kw.arg is not None and isinstance(kw.value, ast.Constant):
                    set_by_demo[kw.arg] = kw.value.value
    assert {"baseline", "whatif", "window_seconds"} <= set(set_by_demo)
    for name, value in set_by_demo.items():
        assert name in BY_NAME, name
        BY_NAME[name].value(value)  # raises if the demo's value is not valid


def test_whatif_is_interpreted_once_into_a_typed_plan():
    plan = AdvisorOptions(whatif=["cache_map", "backends", "cache_map"]).whatif
    assert isinstance(plan, WhatIfPlan) and plan.names == ("cache_map", "backends")
    assert plan.backends and plan.in_process == ("cache_map",)
    assert parse_whatif(plan) is plan  # the options made again (dataclasses.replace) keep it
    assert AdvisorOptions(whatif="needed").whatif == WhatIfPlan("needed") == "needed"
    assert AdvisorOptions(whatif=None).whatif is None
    recorded = AdvisorOptions(whatif=("backends",)).recorded()["whatif"]
    assert recorded == ["backends"]
    for path in ("advisor/collectors", "advisor/tracking"):
        for file in (ROOT / path).rglob("*.py"):
            text = file.read_text(encoding="utf-8")
            for old in ("normalize_whatif", "normalize_baseline", "normalize_profile_steps"):
                assert old not in text, (file, old)


def test_the_whatif_collector_takes_the_plan_as_is():
    from advisor.collectors.registry import build_collectors

    (collector,) = build_collectors(
        AdvisorOptions(collectors=("whatif",), whatif=["backends"], whatif_rounds=4)
    )
    assert collector.backends and collector.requested is None and collector.rounds == 4
    (collector,) = build_collectors(AdvisorOptions(collectors=("whatif",), whatif=None))
    assert collector.requested == "auto" and not collector.backends


def test_budget_is_the_deprecated_name_of_goodput(tmp_path):
    WARNED.discard("budget")
    WARNED.discard("collector:budget")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        callback = advisor.AdvisorCallback(tmp_path, budget=False)
        advisor.AdvisorCallback(tmp_path, budget=False)
        named = advisor.AdvisorCallback(tmp_path, collectors=["budget", "epochs"])
    deprecations = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert len(deprecations) == 2, deprecations  # once per spelling
    assert callback.options.goodput is False
    assert callback.options.recorded()["budget"] is False  # run.json's key is unchanged
    assert "goodput" not in callback.options.recorded()
    assert [c.name for c in named.collectors] == ["goodput", "epochs"]
    with pytest.raises(Exception, match="old name of goodput"):
        advisor.AdvisorCallback(tmp_path, goodput=False, budget=False)


def test_validation_happens_in_the_declaration():
    from advisor.errors import UsageError

    for name, bad in (
        ("baseline_rounds", 0),
        ("whatif_rounds", 2),
        ("cloudwatch_namespace", "AWS/x"),
        ("telemetry_interval_seconds", 0.01),
        ("telemetry_interval_seconds", "1"),  # a usage error, not a TypeError from a comparison
        ("pricing", "cheap"),
    ):
        with pytest.raises(UsageError, match=name):
            BY_NAME[name].value(bad)
        with pytest.raises(UsageError, match=name):
            AdvisorOptions(**{name: bad})
