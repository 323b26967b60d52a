"""Typed errors. Each is shown to people as one line; the CLI maps them to exit codes."""

from __future__ import annotations

import re


class AdvisorError(Exception):
    """Base of every error a user can cause. ``exit_code`` is what the CLI exits with."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(AdvisorError):
    """Wrong arguments or options."""


class RunNotFoundError(AdvisorError):
    """A run id or path that does not exist in the store."""


class RunFormatError(AdvisorError):
    """A run directory whose files are malformed (names the file and line)."""


class SchemaVersionError(RunFormatError):
    """A run written by a newer advisor than this one."""


class ConfigError(AdvisorError):
    """Bad ``[tool.advisor]`` configuration."""


class RuleError(AdvisorError):
    """A rule file that cannot be loaded (names the file and line)."""


class TraceError(AdvisorError):
    """A profiler trace that cannot be read or summarised."""


class CloudError(AdvisorError):
    """A cloud call that failed: no credentials, access denied, a missing bucket, no network."""


def first_line(exc: BaseException | str, limit: int = 300) -> str:
    """The first line of an error's message, at most ``limit`` characters (an ellipsis marks a
    cut), without TensorFlow's op-trace decorations; the type's name when the message is empty.
    Every message the advisor builds from another library's exception goes through here."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__ if isinstance(exc, BaseException) else ""
    line = text.splitlines()[0].split(" [[")[0].split("\tEncountered when")[0]
    line = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", line)
    line = re.sub(r"\s*\[Op:[^\]]*\].*$", "", line)
    line = re.sub(r" with iterator: \S+:", ":", line).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


# What a parser raises on input past its limits rather than malformed: nesting deeper than the
# stack, or a value out of range (e.g. an integer of more than 4300 digits).
PARSER_LIMITS = (RecursionError, ValueError, OverflowError)


def parser_limit(exc: BaseException) -> str:
    """Which of :data:`PARSER_LIMITS` a parser reached, in words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return f"value out of range ({first_line(exc, 80)})"


def one_line(exc: BaseException, limit: int = 300) -> str:
    """``TypeName: first line of the message`` (see :func:`first_line`)."""
    line = first_line(exc, limit)
    return f"{type(exc).__name__}: {line}" if line and str(exc).strip() else type(exc).__name__
