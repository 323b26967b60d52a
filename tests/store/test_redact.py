"""Secrets never reach a sweep file: sentinel secrets in the command line, in the log tails and
in failure reasons are all redacted on disk, names kept; the command in memory is untouched."""

from __future__ import annotations

import json

import pytest

from advisor.store.redact import REDACTED, is_secret_name, redact_argv, redact_text
from advisor.store.sweep import ConfigRecord, SweepRecord, read_sweep, write_sweep

# Sentinels: random-looking values that appear nowhere else, so any leak is found by search.
S = {
    "hf": "hf_S3ntinelHuggingFaceTokenValue0000001",
    "gh": "ghp_S3ntinelGitHubTokenValue000000000000002",
    "aws_id": "AKIAS3NTINEL00000003",
    "aws_secret": "S3ntinelAwsSecretValue/0000004",
    "pw": "S3ntinelPassword0005",
    "url_pw": "S3ntinelUrlPassword0006",
    "wandb": "S3ntinelWandbKey0000000000000000000000007",
    "bearer": "S3ntinelBearerToken.0000008",
    "jwt": "eyJS3ntinel0000009.eyJS3ntinel0000010.S3ntinelSig0011",
    "key": "S3ntinelPlainKey0012",
    "basic": "UzNudGluZWxCYXNpYzAwMTM=",
}
ARGV = [
    "python",
    "train.py",
    "--hf-token",
    S["hf"],
    f"--db-password={S['pw']}",
    f"--data=s3://bucket/x?X-Amz-Credential={S['aws_id']}",
    "--api-key",
    S["wandb"],
    f"postgres://trainer:{S['url_pw']}@db.internal:5432/runs",
    "--key",
    S["key"],
    "--epochs",
    "3",
    "--max-tokens",
    "512",
    "--tokenizer",
    "bert-base",
]
LOG_TAIL = f"""Traceback (most recent call last):
  requests.exceptions.HTTPError: 401 for https://alice:{S["url_pw"]}@example.com/api
AWS_ACCESS_KEY_ID={S["aws_id"]} AWS_SECRET_ACCESS_KEY={S["aws_secret"]}
GITHUB_TOKEN={S["gh"]}
{{"password": "{S["pw"]}", "lr": 0.001}}
headers: {{'Authorization': 'Bearer {S["bearer"]}'}}
Authorization: Basic {S["basic"]}
session token {S["jwt"]}
"""


def test_a_sweep_file_holds_no_secret_but_keeps_the_rest(tmp_path):
    record = SweepRecord(
        sweep_id="s1",
        command=list(ARGV),
        configs=[
            ConfigRecord(
                strategy="jax",
                workers=2,
                run_id="s1-jax-n2-r0",
                status="failed",
                reason=f"worker 1 failed: invalid token {S['hf']}",
                log_tail=LOG_TAIL,
            ),
        ],
    )
    path = write_sweep(tmp_path, record)
    text = path.read_text()
    leaked = [name for name, secret in S.items() if secret in text]
    assert leaked == []
    assert record.command == ARGV  # what launches the workers keeps the real values
    saved = read_sweep(path)
    assert saved.command[:4] == ["python", "train.py", "--hf-token", REDACTED]
    assert "--db-password=***" in saved.command and "--key" in saved.command
    assert saved.command[-6:] == [
        "--epochs",
        "3",
        "--max-tokens",
        "512",
        "--tokenizer",
        "bert-base",
    ]
    assert "postgres://***@db.internal:5432/runs" in saved.command
    tail = saved.configs[0].log_tail
    assert (
        "AWS_SECRET_ACCESS_KEY=***" in tail and "GITHUB_TOKEN=***" in tail and '"lr": 0.001' in tail
    )
    assert "401 for https://***@example.com/api" in tail
    assert json.loads(text)["configs"][0]["status"] == "failed"


@pytest.mark.parametrize(
    "name, secret",
    [
        ("--hf-token", True),
        ("WANDB_API_KEY", True),
        ("apiKey", True),
        ("db_password", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("client_secret", True),
        ("--key", True),
        ("Authorization", True),
        ("--max-tokens", False),
        ("--tokenizer", False),
        ("--keep-checkpoints", False),
        ("--epochs", False),
        ("monkey", False),
        ("sort_key", False),
    ],
)
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_redaction_is_idempotent_and_leaves_plain_text_alone():
    plain = "epoch 3/10 - loss: 0.25 - accuracy: 0.91 - lr=0.001 https://example.com/data"
    assert redact_text(plain) == plain
    once = redact_text(LOG_TAIL)
    assert redact_text(once) == once
    assert redact_argv(redact_argv(ARGV)) == redact_argv(ARGV)


@pytest.mark.parametrize(
    "prefix", ["unrecognized arguments: ", "error: ", "args: ", "cmd=", "note: x "]
)
@pytest.mark.parametrize(
    "secret",
    ["--api-key=sk-short12", "--hf-token=abc123", "DB_PASSWORD=hunter2", "--auth-token=t0k3n"],
)
def test_a_secret_behind_a_harmless_name_is_hidden(prefix, secret):
    # argparse's "unrecognized arguments: --api-key=sk-…" in a worker's log tail: the outer
    # "arguments: …" assignment matched first and hid the inner one from the name check.
    out = redact_text(prefix + secret)
    assert out == prefix + secret.split("=", 1)[0] + "=***"
