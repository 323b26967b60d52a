"""Advice in the user's framework: a rule's fix and the hints to decide more follow the run's loop
(Keras ``fit`` or ``advisor.track``) and backend; Keras-only rules are n/a in a custom loop."""

from __future__ import annotations

import re

import pytest

from advisor.diagnosis.engine import RunInfo, diagnose_facts, evaluate
from advisor.diagnosis.rules import fix_contexts, load_rules

RULES = {r.code: r for r in load_rules()}
# What only a Keras fit has: naming it to a custom loop's user is advice in the wrong framework.
KERAS_FIT_ONLY = re.compile(
    r"AdvisorCallback|model\.compile|\bfit\(|`fit`|steps_per_execution|keras\.callbacks"
    r"|on_epoch_begin|validation_freq|feed fit\(\)"
)


def _track(backend: str) -> dict[str, object]:
    return {
        "context.framework": "custom",
        "context.input_kind": "custom",
        "context.backend": backend,
    }


def _fit(backend: str) -> dict[str, object]:
    return {
        "context.framework": "keras3",
        "context.input_kind": "tf.data",
        "context.backend": backend,
    }


@pytest.mark.parametrize("backend", ["torch", "jax", "tensorflow"])
def test_no_fix_tells_a_custom_loop_to_change_what_only_fit_has(backend):
    """Every rule that can judge a custom loop speaks its language there (the general fix or a
    ``fix_for`` variant), whatever the backend."""
    wrong = {
        code: KERAS_FIT_ONLY.findall(rule.fix_in(_track(backend)).source)
        for code, rule in RULES.items()
        if not rule.fit_only
    }
    assert {code: words for code, words in wrong.items() if words} == {}


def test_the_most_specific_variant_wins_and_fit_keeps_the_general_fix():
    g551 = RULES["G551"]
    assert fix_contexts(_track("torch")) == ("track:torch", "track")
    assert fix_contexts(_fit("jax")) == ("input:tf.data", "fit:jax")
    assert fix_contexts({**_fit("jax"), "context.input_kind": "unknown"}) == ("fit:jax",)
    assert "torch.compile" in g551.fix_in(_track("torch")).source
    assert "jax.lax.scan" in g551.fix_in(_track("jax")).source
    assert "steps_per_execution=32" in g551.fix_in(_fit("tensorflow")).source
    assert g551.fix_in({}).source == g551.fix.source  # context unknown: the general fix
    m101 = RULES["M101"]  # one variant for every custom loop
    assert m101.fix_in(_track("jax")).source == m101.fix_in(_track("torch")).source
    assert "advisor.track(log_every_seconds=60)" in m101.fix_in(_track("jax")).source
    m154 = RULES["M154"]  # a variant for fit on torch, with an input of no variant of its own
    unknown_input = {**_fit("torch"), "context.input_kind": "unknown"}
    assert "persistent_workers=True" in m154.fix_in(unknown_input).source
    assert m154.fix_in({**_fit("jax"), "context.input_kind": "unknown"}).source == m154.fix.source


def _fed(kind: str, backend: str = "tensorflow") -> dict[str, object]:
    return {**_fit(backend), "context.input_kind": kind}


@pytest.mark.parametrize(
    "kind,says,never",
    [
        ("numpy", "from_tensor_slices((x, y))", "persistent_workers"),
        ("generator", "while True:", "persistent_workers"),
        ("pydataset", "use_multiprocessing=False", ".repeat()"),
        ("torch", "persistent_workers=True", ".repeat()"),
        ("tf.data", ".repeat()", "persistent_workers"),
    ],
)
def test_epoch_start_fix_follows_the_input(kind, says, never):
    """M154's fix is written for what fit reads: arrays get no tf.data-only advice to end
    ``.repeat()``-ed, a DataLoader gets its own switch, whatever the backend."""
    for backend in ("tensorflow", "torch"):
        fix = RULES["M154"].fix_in(_fed(kind, backend)).source
        assert says in fix and never not in fix, (kind, backend, fix)
    numpy_fix = RULES["M154"].fix_in(_fed("numpy")).source
    assert not numpy_fix.lstrip().startswith("Build the input iterator once: end the dataset")


@pytest.mark.parametrize(
    "code,kind,says,never",
    [
        ("M108", "numpy", "from_tensor_slices((x, y))", "persistent_workers"),
        ("M108", "generator", "keras.utils.PyDataset", "num_parallel_calls=tf.data"),
        ("M108", "pydataset", "`max_queue_size`", "num_parallel_calls=tf.data"),
        ("M108", "torch", "`num_workers`", "from_tensor_slices"),
        ("M108", "tf.data", "num_parallel_calls=tf.data.AUTOTUNE", "persistent_workers"),
        ("C451", "numpy", "multiple of `batch_size`", "drop_remainder"),
        ("C451", "generator", "Yield batches of one shape", "drop_remainder"),
        ("C451", "pydataset", "`__getitem__`", "drop_remainder"),
        ("C451", "torch", "drop_last=True", "drop_remainder"),
        ("C451", "tf.data", "drop_remainder=True", "drop_last"),
    ],
)
def test_input_bound_and_retrace_fixes_follow_the_input(code, kind, says, never):
    """M108 (the input costs time) and C451 (the step is traced again) speak of what fit reads:
    arrays, a generator, a PyDataset, a DataLoader or tf.data, each a change it can apply."""
    for backend in ("tensorflow", "jax", "torch"):
        fix = RULES[code].fix_in(_fed(kind, backend)).source
        assert says in fix and never not in fix, (code, kind, backend, fix)


def test_the_input_kind_is_read_from_the_pipeline_record_too():
    facts = {
        "context.framework": "keras3",
        "context.backend": "jax",
        "pipeline.input_kind": "numpy",
    }
    assert fix_contexts(facts) == ("input:numpy", "fit:jax")


def _dispatch_bound(loop: dict[str, object]) -> dict[str, object]:
    return {
        **loop,
        "context.steps_per_execution": 1,
        "steps.time_ms.mean": 0.2,
        "context.device": "cpu",
    }


def test_the_engine_renders_the_variant_of_the_run():
    torch_loop = evaluate(RULES["G551"], _dispatch_bound(_track("torch")))
    keras_fit = evaluate(RULES["G551"], _dispatch_bound(_fit("torch")))
    assert torch_loop.status == keras_fit.status == "fail"
    assert "torch.compile" in torch_loop.fix and "model.compile" not in torch_loop.fix
    assert "steps_per_execution=32" in keras_fit.fix


def test_keras_only_rules_are_not_applicable_to_a_custom_loop_and_say_why():
    eager = {"context.run_eagerly": True, "context.graph_retraces": 0}
    in_fit = evaluate(RULES["C450"], {**_fit("tensorflow"), **eager})
    in_loop = evaluate(RULES["C450"], {**_track("torch"), **eager})
    assert in_fit.status == "fail"
    assert in_loop.status == "n/a" and in_loop.message.startswith(
        "does not apply to a custom loop: "
    )
    assert "run_eagerly" in in_loop.message
    slow_hook = {
        "callbacks.slowest": "Logger.on_train_batch_end",
        "callbacks.slowest_step_share": 0.5,
    }
    assert evaluate(RULES["C460"], {**_fit("jax"), **slow_hook}).status == "fail"
    assert evaluate(RULES["C460"], {**_track("jax"), **slow_hook}).status == "n/a"


def test_hints_to_decide_more_speak_the_loop_s_language():
    facts = {
        **_track("torch"),
        "throughput.samples_per_s": 1000.0,
        "throughput.measured_steps": 500,
    }
    report = diagnose_facts(facts, list(RULES.values()), run=RunInfo(run_id="r", status="finished"))
    unknown = {f.code: f.measure for f in report.findings if f.status == "unknown"}
    assert unknown, "a bare custom loop leaves rules undecided"
    for code, hint in unknown.items():
        assert not KERAS_FIT_ONLY.search(hint or ""), (code, hint)
    assert "advisor.track does not see the loop's loader" in unknown["C401"]
    assert "torch.profiler" in unknown["M110"]
    how = " ".join(group.how for group in report.coverage.to_decide)
    assert "AdvisorCallback(" not in how and "feed fit()" not in how
    fit_report = diagnose_facts(
        {**_fit("tensorflow"), "throughput.samples_per_s": 1000.0},
        list(RULES.values()),
        run=RunInfo(run_id="r", status="finished"),
    )
    fit_unknown = {f.code: f.measure for f in fit_report.findings if f.status == "unknown"}
    assert "feed fit() a tf.data.Dataset" in fit_unknown["C402"]
