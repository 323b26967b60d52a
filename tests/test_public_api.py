"""The public API reads as typed Python: real names for IDEs and type checkers, lazy at run time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

import advisor


def test_every_public_name_is_listed_and_resolves():
    assert set(advisor.__all__) <= set(dir(advisor))
    for name in advisor.__all__:
        assert getattr(advisor, name) is not None, name


@pytest.mark.slow  # runs mypy in a process
@pytest.mark.long  # ~50 s with a core busy: CI's own step
def test_a_type_checker_sees_the_real_signatures(tmp_path):
    pytest.importorskip("mypy")
    script = tmp_path / "use.py"
    script.write_text(
        textwrap.dedent("""
        import advisor

        reveal_type(advisor.track)
        reveal_type(advisor.track(64, "runs", window_seconds=5.0))
        reveal_type(advisor.AdvisorCallback("runs", window_seconds=5.0))
        reveal_type(advisor.runs_frame)
        reveal_type(advisor.findings_frame)
        reveal_type(advisor.epochs_frame)
        advisor.AdvisorCallback(baseline="sometimes")
        advisor.tracked(batch_size=64, pricing="cheap")
    """)
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    revealed = [
        line.split("Revealed type is ", 1)[1]
        for line in out.stdout.splitlines()
        if "Revealed type" in line
    ]
    assert len(revealed) == 6, out.stdout
    track, run, callback, *frames = revealed
    assert (
        track.startswith('"def (batch_size: int | None =, runs_dir:')
        and "window_seconds: float" in track
    )
    assert "pricing: Literal['table'] | Literal['aws'] | None" in track
    assert (
        run == '"advisor.tracking.run.TrackedRun"'
        and callback == '"advisor.collectors.callback.AdvisorCallback"'
    )
    assert all(
        frame.startswith('"def (runs_dir: str | os.PathLike[str] | None =') for frame in frames
    )  # store first
    assert (
        'Argument "baseline" to "AdvisorCallback" has incompatible type' in out.stdout
    )  # a Literal, checked
    assert (
        'No overload variant of "tracked" matches' in out.stdout
    )  # tracked's options are typed too


def test_old_option_spellings_still_work_and_warn_once(tmp_path):
    from advisor.collectors import options

    options._warned.discard("window_s")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = advisor.AdvisorCallback(tmp_path, window_s=3.0, telemetry=False)
        second = advisor.AdvisorCallback(tmp_path, window_s=4.0, telemetry=False)
    assert (first.options.window_seconds, second.options.window_seconds) == (3.0, 4.0)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        "AdvisorCallback(window_s=...) is deprecated: use window_seconds="
    ]
    assert first.options.recorded()["window_s"] == 3.0  # run.json keeps its keys


def test_both_spellings_of_one_option_is_a_usage_error(tmp_path):
    from advisor.errors import UsageError

    with pytest.raises(UsageError, match="old name of log_every_seconds"):
        advisor.AdvisorCallback(tmp_path, log_every_s=5.0, log_every_seconds=7.0)
    with pytest.raises(
        UsageError, match="old name of window_seconds"
    ):  # the new one at its default too
        advisor.AdvisorCallback(tmp_path, window_s=5.0, window_seconds=10.0)
    with pytest.raises(UsageError, match="old name of telemetry_interval_seconds"):
        advisor.track(8, tmp_path, telemetry_interval_s=2.0, telemetry_interval_seconds=3.0)
    with pytest.raises(TypeError, match="did you mean 'window_seconds'"):
        advisor.AdvisorCallback(tmp_path, window_second=5.0)


def test_true_means_the_default_way_for_baseline_and_whatif(tmp_path):
    callback = advisor.AdvisorCallback(tmp_path, baseline=True, whatif=True)
    assert (callback.options.baseline, callback.options.whatif) == ("auto", "auto")


def test_an_explicit_argument_beats_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_PRICING", "aws")
    monkeypatch.setenv("ADVISOR_INSTANCE_TYPE", "p4d.24xlarge")
    monkeypatch.setenv("ADVISOR_INSTANCE_METADATA", "1")
    from_env = advisor.AdvisorCallback(tmp_path).options
    assert (from_env.pricing, from_env.instance_type, from_env.instance_metadata) == (
        "aws",
        "p4d.24xlarge",
        True,
    )
    given = advisor.AdvisorCallback(
        tmp_path, pricing="table", instance_type="g5.xlarge", instance_metadata=False
    ).options
    assert (given.pricing, given.instance_type, given.instance_metadata) == (
        "table",
        "g5.xlarge",
        False,
    )
    monkeypatch.setenv("ADVISOR_RUNS_DIR", str(tmp_path / "from-env"))
    from advisor.store.paths import resolve_runs_dir

    assert resolve_runs_dir(tmp_path / "given") == tmp_path / "given"
    assert resolve_runs_dir(None) == tmp_path / "from-env"


def test_track_takes_the_old_spellings_too_and_only_its_own_options(tmp_path):
    from advisor.collectors import options

    options._warned.discard("log_every_s")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = advisor.track(8, tmp_path, log_every_s=None)
        advisor.track(8, tmp_path, log_every_s=5.0)
    assert run.options.log_every_seconds is None and run.options.runs_dir == str(tmp_path)
    deprecations = [w for w in caught if w.category is DeprecationWarning]
    assert len(deprecations) == 1 and deprecations[0].filename == __file__  # the user's line, once
    with pytest.raises(
        TypeError, match="unexpected option 'baseline'"
    ):  # a callback option, not a loop's
        advisor.track(8, tmp_path, baseline="end")
    with pytest.raises(TypeError, match="unexpected option 'profile_timeout_s'"):
        advisor.track(8, tmp_path, profile_timeout_s=5.0)


def test_tracked_has_the_options_of_track_as_keywords(tmp_path):
    import inspect

    from advisor.tracking.run import TRACK_OPTIONS

    def keywords(fn):
        return [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

    assert keywords(advisor.track) == keywords(advisor.tracked) == list(TRACK_OPTIONS)
    with pytest.raises(
        TypeError, match="did you mean 'window_seconds'"
    ):  # when decorating, not at the first call
        advisor.tracked(batch_size=8, window_second=1.0)

    @advisor.tracked(batch_size=8, runs_dir=tmp_path, telemetry=False, log_every_seconds=None)
    def train(run=None):
        run.step()
        return run

    assert train().options.telemetry is False and train.__name__ == "train"
