"""Property tests: any `[tool.advisor]` configuration and any `--threshold` option gives
settings or a ConfigError / UsageError naming the file or option, within a time limit — and a
threshold that is NaN or infinite is refused, never silently turning a failing rule into a pass.

The deep fuzzer (`test_many_*`, slow) draws a fifth of its 2000 examples in the suite's run,
the same ones every run (the `replay` profile); `ADVISOR_HYPOTHESIS=explore` draws all
2000 anew, `ADVISOR_FUZZ_EXAMPLES=N` draws N (tests/faults/fault_helpers.py)."""

from __future__ import annotations

import pytest
from fault_helpers import (
    assert_clean,
    assert_one_clear_line,
    cli,
    examples,
    fuzz_examples,
    lines,
    time_limit,
    valid_manifest,
    valid_records,
    write_run_dir,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.diagnosis import load_rules
from advisor.diagnosis.config import (
    DEFAULT_FAIL_ON,
    FAIL_LEVELS,
    Config,
    load_config,
    parse_threshold_options,
    resolve,
)
from advisor.errors import ConfigError, UsageError

pytestmark = pytest.mark.timeout(600, method="thread")

RULES = load_rules()
KEYS = [
    "select",
    "extend-select",
    "ignore",
    "fail-on",
    "min-measured-steps",
    "thresholds",
    "runs-dir",
    "unknown-key",
]
TOML_VALUES = [
    "nan", "inf", "-inf", "+nan", "1e999", "9" * 5000, "9" * 400, "-1", "0", "20", "1.5", "true",
    '"warning"', '"ALL"', '["C4", "M1"]', '["Z9"]', "[1, 2]", "[[[[[[]]]]]]",
    "[" * 2000 + "]" * 2000, "{}", '{M108 = {warn_fraction = nan}}',
    '{M108 = {warn_fraction = inf}}', '{M108 = {warn_fraction = "x"}}', '{M108 = {nope = 1}}',
    '{Z999 = {a = 1}}', '{M108 = 1}', '{M108 = {warn_fraction = ' + "9" * 400 + "}}",
    '"\\ud800"', '"' + "x" * 10000 + '"',
]  # fmt: skip


@st.composite
def configs(draw: st.DrawFn) -> str:
    table = {
        k: draw(st.sampled_from(TOML_VALUES))
        for k in draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True))
    }
    text = "[tool.advisor]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
    if draw(st.booleans()):
        text = (
            draw(
                st.sampled_from(
                    [
                        "tool = 1\n",
                        "[tool]\nadvisor = 3\n",
                        "[tool.advisor.thresholds.M108]\nwarn_fraction = nan\n",
                        "",
                    ]
                )
            )
            + text
        )
    return text


def _load_and_resolve(path) -> None:
    with time_limit(10):
        try:
            config = load_config(path)
            resolved = resolve(RULES, config, Config())
        except (ConfigError, UsageError) as exc:
            assert_one_clear_line(exc, names=path)  # the file to fix
            return
    assert set(resolved.codes) <= {r.code for r in RULES} and resolved.fail_on in FAIL_LEVELS
    # what the file asked for, no more: its thresholds as written, its fail level or the default
    assert resolved.thresholds == {
        code: values for code, values in config.thresholds.items() if values
    }
    assert resolved.fail_on == (config.fail_on or DEFAULT_FAIL_ON)


@settings(max_examples=examples(200))
@given(text=configs() | st.text(max_size=200))
def test_any_configuration_gives_settings_or_a_clean_error(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "pyproject.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _load_and_resolve(path)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(2000))
@given(text=configs())
def test_many_configurations(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "pyproject.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _load_and_resolve(path)


@settings(max_examples=examples(200))
@given(
    options=st.lists(
        st.text(max_size=40)
        | st.sampled_from(
            [
                "M108.warn_fraction=nan",
                "M108.warn_fraction=inf",
                "M108.warn_fraction=1e999",
                "M108.warn_fraction=" + "9" * 5000,
                "M108.warn_fraction=-1e309",
                "M108.x=1",
                "=",
                ".=",
                "M108.=1",
            ]
        ),
        max_size=3,
    )
)
def test_any_threshold_option_gives_settings_or_a_usage_error(options):
    with time_limit(5):
        try:
            given_thresholds = parse_threshold_options(options)
            resolved = resolve(RULES, Config(), Config(thresholds=given_thresholds))
        except (ConfigError, UsageError) as exc:
            assert_one_clear_line(exc)
            assert str(exc).startswith("--threshold"), str(exc)  # names the option, not a file
            return
    assert resolved.thresholds == given_thresholds  # every option given, as given (none: none)
    assert all(
        isinstance(v, (int, float, str)) for t in resolved.thresholds.values() for v in t.values()
    )


@settings(max_examples=examples(20))
@given(text=configs())
def test_check_with_any_configuration_exits_cleanly(text, tmp_path_factory):
    root = tmp_path_factory.mktemp("case")
    (root / "pyproject.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
    run = write_run_dir(
        root / "runs" / "r", __import__("json").dumps(valid_manifest()), lines(valid_records())
    )
    with time_limit(20):
        assert_clean(cli("check", str(run), "--config", str(root / "pyproject.toml")))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_a_non_finite_threshold_is_refused_naming_rule_and_key(tmp_path, value):
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.advisor.thresholds.M108]\nwarn_fraction = {value}\n")
    with pytest.raises(ConfigError, match=r"M108\.warn_fraction must be a finite number"):
        resolve(RULES, load_config(path), Config())
    with pytest.raises(UsageError, match=r"M108\.warn_fraction must be a finite number"):
        resolve(
            RULES,
            Config(),
            Config(thresholds=parse_threshold_options([f"M108.warn_fraction={value}"])),
        )
