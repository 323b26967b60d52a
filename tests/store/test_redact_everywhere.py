"""Secrets out of every file the advisor writes for sharing: a property test
puts secrets of every shape into error messages, URLs, JSON and shell lines, and a real fit whose
collector fails with a secret in its message leaves it in no record, manifest or report."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from property_examples import examples

from advisor.store.redact import redact_text, redact_value

ALNUM = string.ascii_letters + string.digits
body = st.text(alphabet=ALNUM, min_size=36, max_size=48)
# Token shapes, whatever their surroundings call them.
shaped = st.one_of(
    body.map(lambda b: "hf_" + b),
    body.map(lambda b: "ghp_" + b),
    body.map(lambda b: "sk-" + b),
    st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(
        lambda b: "AKIA" + b
    ),
    body.map(lambda b: "xoxb-" + b),
    body.map(lambda b: "glpat-" + b[:24]),
)
# Values that only their name marks as secret.
plain = st.text(alphabet=ALNUM + "/+", min_size=8, max_size=32).filter(lambda v: v[0].isalnum())
names = st.sampled_from(
    [
        "password",
        "DB_PASSWORD",
        "api_key",
        "apiKey",
        "secret",
        "auth-token",
        "WANDB_API_KEY",
        "client_secret",
        "private_key",
        "access-key",
    ]
)


def _apart(value: str, *texts: str) -> bool:
    """The drawn value is no part of the text around it: a value that is ("password" for the key
    ``password=``; Hypothesis mixes the test's own constants into its draws) stays in the
    redacted text as the key's name, and the check would be about the draw, not the redaction."""
    low = value.lower()
    return not any(low in text.lower() for text in texts)


@st.composite
def named(draw):
    name = draw(names)
    form = draw(
        st.sampled_from(
            [
                "{n}={v}",
                "{n}: {v}",
                '"{n}": "{v}"',
                "--{n} {v}",
                "--{n}={v}",
                "export {n}={v}",
                "{{'{n}': '{v}'}}",
            ]
        )
    )
    value = draw(plain.filter(lambda v: _apart(v, name, form, *CONTEXTS, *JSON_KEYS)))
    return form.format(n=name, v=value), value


CONTEXTS = [
    "RuntimeError: upload failed ({})",
    "unrecognized arguments: {}",
    "python train.py --epochs 3 {} --lr 0.1",
    '{{"error": "{}", "code": 401}}',
    "  File x.py, line 3\n    {}\nValueError",
    "env: {} PATH=/usr/bin",
]
JSON_KEYS = ["reason", "failed", "api_key", "nested", "message", "steps", "lr", "ok", "true"]
contexts = st.sampled_from(CONTEXTS)


@settings(max_examples=examples(300))
@given(secret=shaped, context=contexts)
def test_a_token_shape_is_hidden_in_any_text(secret, context):
    assert secret not in redact_text(context.format(secret))


@settings(max_examples=examples(300))
@given(pair=named(), context=contexts)
def test_a_value_named_secret_is_hidden_in_any_text(pair, context):
    text, value = pair
    assert value not in redact_text(context.format(text))


@settings(max_examples=examples(200))
@given(
    user=st.text(alphabet=ALNUM, min_size=3, max_size=12),
    password=st.text(alphabet=ALNUM + "-._~%", min_size=6, max_size=24),
    host=st.sampled_from(["db.internal:5432", "example.com", "10.0.0.2"]),
    scheme=st.sampled_from(["https", "postgres", "s3", "redis"]),
)
def test_credentials_in_a_url_are_hidden(user, password, host, scheme):
    # (a URL's user information cannot hold "/", "@" or ":" unencoded: RFC 3986)
    around = f"cannot open {scheme}://{user}:@{host}/path: timed out"
    assume(_apart(password, around))  # a password that is also its URL's text stays as that
    out = redact_text(f"cannot open {scheme}://{user}:{password}@{host}/path: timed out")
    assert password not in out and f"{host}/path" in out


@settings(max_examples=examples(200))
@given(secret=shaped, pair=named())
def test_json_data_keeps_its_shape_and_loses_its_secrets(secret, pair):
    text, value = pair
    data = {
        "reason": f"failed: {secret}",
        "api_key": value,
        "nested": [{"message": text, "steps": 12}],
        "lr": 0.01,
        "ok": True,
    }
    out = redact_value(data)
    dumped = json.dumps(out)
    assert secret not in dumped and value not in dumped
    assert out["lr"] == 0.01 and out["ok"] is True and out["nested"][0]["steps"] == 12


SECRET = "sk-S3ntinelCollectorSecret00000000000001"
URL_PASSWORD = "S3ntinelUrlPassw0rd"


@pytest.mark.slow
def test_a_fit_whose_collector_fails_with_a_secret_shares_none(tmp_path):
    """A real fit; a user's collector (a public extension point) fails with a token and a URL
    with credentials in its message. Training goes on; no file the run or its reports write holds
    either secret."""
    keras = pytest.importorskip("keras")
    np = pytest.importorskip("numpy")
    from click.testing import CliRunner

    import advisor
    from advisor.cli.main import cli
    from advisor.collectors.collector import Collector

    class Uploader(Collector):
        name = "uploader"

        def on_epoch_end(self, epoch, logs=None) -> None:
            raise RuntimeError(
                f"upload to https://bot:{URL_PASSWORD}@tracker.internal/api failed; key {SECRET}"
            )

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    cb = advisor.AdvisorCallback(
        tmp_path / "runs",
        collectors=["throughput", "epochs", Uploader()],
        tags={"wandb_api_key": "S3ntinelTagValue01", "team": "vision"},
        baseline=None,
        telemetry=False,
        log_every_seconds=None,
    )
    history = model.fit(x, x[:, :1], epochs=2, batch_size=16, verbose=0, callbacks=[cb])
    assert len(history.history["loss"]) == 2  # the failing collector did not stop the fit
    shared = [p.read_text() for p in cb.run_path.rglob("*") if p.is_file()]
    for fmt in ("json", "sarif", "text"):
        result = CliRunner().invoke(cli, ["check", str(cb.run_path), "--format", fmt])
        assert result.exit_code in (0, 1, 3), result.output
        shared.append(result.output)
    everything = "\n".join(shared)
    assert (
        "upload to https://***@tracker.internal/api failed; key ***" in everything
    )  # the event, redacted
    for secret in (SECRET, URL_PASSWORD, "S3ntinelTagValue01"):
        assert secret not in everything
    assert '"team": "vision"' in (cb.run_path / "run.json").read_text()  # ordinary tags stay
