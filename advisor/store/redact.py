"""Secrets out of what the store keeps: command lines and log tails in sweep records, the free
text of run records (error messages, reasons, paths), and the worker and launcher logs kept beside
a sweep (``advisor.launch.logpipe``), before any of it reaches a shared file.

Real launch lines carry tokens (``--hf-token hf_…``), passwords (``DB_PASSWORD=…``) and URLs with
credentials (``https://user:pass@host``); a sweep file is shared, copied and attached to CI.
Redaction replaces the secret value with ``***`` and keeps its name, so the record still says
what was passed. It errs on the side of hiding: a harmless value that looks secret is hidden too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

REDACTED = "***"

# Name parts (split on - _ . and case changes) that mark the value as secret on their own…
_SECRET_PARTS = {
    "password", "passwd", "pwd", "passphrase", "secret", "secrets", "token", "apikey",
    "credential", "credentials", "authorization", "cookie", "sessionid",
}  # fmt: skip
# …and pairs that do (``api key``, ``access key``, ``auth token``...).
_SECRET_PAIRS = {
    ("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"), ("auth", "key"),
    ("account", "key"), ("license", "key"), ("encryption", "key"), ("signing", "key"),
    ("client", "secret"), ("auth", "token"), ("session", "key"),
}  # fmt: skip

_NAME_SPLIT = re.compile(r"[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])")
# key=value, key: value, "key": "value" (JSON, YAML, env, query strings)
_ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,80})(?P<q1>["']?)(?P<sep>\s*[=:]\s*)(?P<q2>["']?)"""
    # a value that is itself "name: …" is no value: the inner assignment is matched on its own
    r"""(?P<value>(?![A-Za-z][A-Za-z0-9_.-]{0,80}["']?\s*[=:]\s)[^\s"',;&}]+)"""
)
# --flag value (a command line printed in a log)
_FLAG_VALUE = re.compile(
    r"(?P<flag>--?[A-Za-z][A-Za-z0-9_.-]{0,80})(?P<sep>\s+)(?P<value>[^\s-]\S*)"
)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]{0,20}://)[^\s/@:]*:[^\s/@]*@")
_AUTH_HEADER = re.compile(
    r"""(?i)\b(?P<head>(?:proxy-)?authorization["']?\s*[:=]\s*["']?)"""
    r"""(?:(?:bearer|basic|digest|token|negotiate)\s+)?[^\s"']+"""
)
_BEARER = re.compile(r"(?i)\b(?P<kind>bearer)(?P<sep>\s+)[A-Za-z0-9._~+/=-]{8,}")
# Well-known token shapes, whatever they are called.
_TOKENS = re.compile(
    r"\b(?:"
    r"AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI-style
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r")"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL
)


def is_secret_name(name: str) -> bool:
    """Whether a flag, variable or field name says its value is a secret."""
    parts = [p.lower() for p in _NAME_SPLIT.split(name.strip("-\"' ")) if p]
    if any(p in _SECRET_PARTS for p in parts):
        return True
    if any(pair in _SECRET_PAIRS for pair in pairwise(parts)):
        return True
    return parts == ["key"] or parts == ["pass"]


def redact_text(text: str) -> str:
    """``text`` with secret values replaced by ``***`` (names kept)."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub(f"-----BEGIN PRIVATE KEY-----{REDACTED}", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _TOKENS.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['head']}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m['kind']}{m['sep']}{REDACTED}", text)
    text = _ASSIGNMENT.sub(_assignment, text)
    return _FLAG_VALUE.sub(_flag_value, text)


def _assignment(m: re.Match[str]) -> str:
    if m["value"] == REDACTED:
        return m[0]
    if not is_secret_name(m["name"]):
        # "unrecognized arguments: --api-key=sk-…": the outer name is harmless, but its value may
        # hold an assignment of its own; matches never overlap, so look inside it.
        head = m[0][: m.start("value") - m.start()]
        inner = (
            _ASSIGNMENT.sub(_assignment, m["value"])
            if _ASSIGNMENT.search(m["value"])
            else m["value"]
        )
        return head + inner
    return f"{m['name']}{m['q1']}{m['sep']}{m['q2']}{REDACTED}"


def _flag_value(m: re.Match[str]) -> str:
    if not is_secret_name(m["flag"]) or m["value"] == REDACTED:
        return m[0]
    return f"{m['flag']}{m['sep']}{REDACTED}"


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with secret values replaced: ``--token X`` → ``--token ***``, and every
    argument through :func:`redact_text` (``KEY=value``, URLs with credentials, token shapes)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        text = str(arg)
        if hide_next and not text.startswith("-"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if text.startswith("-") and "=" not in text and is_secret_name(text):
            hide_next = True
            out.append(text)
            continue
        out.append(redact_text(text))
    return out


# Records made of numbers and fixed names, written often: nothing of the user's text to hide.
NUMERIC_RECORDS = frozenset(
    {"window", "heartbeat", "epoch", "first_step", "gpu", "host", "budget", "start", "end"}
)


def redact_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A record about to be written (plain JSON data), with every string in it redacted: error
    messages, reasons and paths may quote a token or a URL with credentials. Records of numbers
    (windows, samples) pass untouched, so the hot path stays cheap."""
    if payload.get("type") in NUMERIC_RECORDS:
        return payload
    return redact_value(payload)  # type: ignore[no-any-return]


def redact_value(value: Any) -> Any:
    """JSON data with its strings redacted, and the value of every key that names a secret
    (``{"api_key": …}``, a tag, an option) hidden whole."""
    if isinstance(value, str):
        return redact_text(value) if len(value) > 3 else value
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str)
            and v
            and not isinstance(v, (bool, int, float, dict, list))
            and is_secret_name(k)
            else redact_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


# Named like a secret ("pwd"), holding the working directory: hiding it would hide every path.
_DIRECTORY_VARIABLES = frozenset({"PWD", "OLDPWD"})


def secret_values(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The secrets a process is given, word for word, longest first: values of secret-named flags
    (``--api-key=X``, ``--token X``) and variables (``DB_PASSWORD``), and token shapes anywhere in
    its arguments or environment. A log that quotes one elsewhere (a config dump, a traceback) has
    it hidden too. Values shorter than 4 characters are left to the patterns (they would hide too
    much)."""
    found: set[str] = set()
    args = [str(a) for a in argv]
    for arg, following in zip(args, [*args[1:], ""]):
        name, sep, value = arg.partition("=")
        if sep and is_secret_name(name):
            found.add(value)
        elif arg.startswith("-") and not sep and is_secret_name(arg) and following[:1] != "-":
            found.add(following)
        found.update(_TOKENS.findall(arg))
    for name, value in env.items():
        if is_secret_name(name) and name not in _DIRECTORY_VARIABLES:
            found.add(value)
        found.update(_TOKENS.findall(value))
    return sorted((v for v in found if len(v) >= 4), key=len, reverse=True)


def redact_known(text: str, values: Sequence[str]) -> str:
    """``text`` through :func:`redact_text`, then each of ``values`` (``secret_values``) hidden
    wherever it still appears."""
    text = redact_text(text)
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text
