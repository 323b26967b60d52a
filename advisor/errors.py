"""Typed errors. Each is shown to people as one line; the CLI maps them to exit codes."""

from __future__ import annotations


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
