"""``[tool.advisor]`` in pyproject.toml: selection, fail level and threshold overrides.

    [tool.advisor]
    select = ["ALL"]
    extend-select = []
    ignore = ["P70"]
    fail-on = "warning"            # info | warning | error
    min-measured-steps = 20        # evidence gate: fewer measured steps caps findings at info

    [tool.advisor.thresholds.M108]
    warn_fraction = 0.15

The nearest pyproject.toml from the working directory upwards is used (or ``--config FILE``).
The command line wins over the file. Keys this module does not know are left to other parts of
advisor and only logged. The file is read within a size limit; a threshold must be a finite
number (NaN or infinity would silently turn a failing rule into a pass) and the error names the
rule and the key.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.bounded_reads import read_text
from advisor.diagnosis.expr_runtime import finite_number, number_text
from advisor.diagnosis.selection import Layer, normalize, select_codes, validate
from advisor.errors import PARSER_LIMITS, ConfigError, UsageError, parser_limit

log = logging.getLogger("advisor")

FAIL_LEVELS = ("info", "warning", "error")
DEFAULT_FAIL_ON = "warning"
DEFAULT_MIN_STEPS = 20
MAX_MIN_STEPS = 10**9
MAX_CONFIG_BYTES = 1 << 20
_KNOWN_KEYS = {"select", "extend-select", "ignore", "fail-on", "min-measured-steps", "thresholds"}
_OTHER_KEYS = {"runs-dir", "instance-type", "price-per-hour", "format", "output-format"}


@dataclass
class Config:
    """One source of settings (the file or the command line). ``None`` means "not given"."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str | None = None
    min_measured_steps: int | None = None
    thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = None

    def layer(self) -> Layer:
        return Layer(self.select, self.extend_select, self.ignore)


@dataclass
class Resolved:
    """The settings a diagnosis runs with, after defaults < file < command line."""

    codes: list[str]
    select: list[str]
    extend_select: list[str]
    ignore: list[str]
    fail_on: str
    min_measured_steps: int
    thresholds: dict[str, dict[str, Any]]
    config_file: str | None


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml from ``start`` (default: the working directory) upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | Path | None = None, *, search: bool = True) -> Config:
    """Read ``[tool.advisor]`` from ``path``, or from the nearest pyproject.toml when searching."""
    import tomllib

    if path is None:
        found = find_pyproject() if search else None
        if found is None:
            return Config()
        file = found
    else:
        file = Path(path)
        if not file.exists():
            raise ConfigError(f"{file}: no such configuration file")
    text = read_text(file, MAX_CONFIG_BYTES, ConfigError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML ({exc})") from None
    except PARSER_LIMITS as exc:
        raise ConfigError(f"{file}: invalid TOML ({parser_limit(exc)})") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{file}: [tool] must be a table")
    table = tool.get("advisor")
    if table is None and file.name != "pyproject.toml":
        table = data  # a dedicated advisor.toml holds the keys at top level
    if table is None:
        return Config(source=str(file))
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [tool.advisor] must be a table")
    return parse_table(table, str(file))


def parse_table(table: Mapping[str, Any], source: str) -> Config:
    where = f"{source}: [tool.advisor]"
    for key in table:
        if key not in _KNOWN_KEYS and key not in _OTHER_KEYS:
            log.warning("%s: unknown key %r ignored", where, key)

    def selectors(key: str) -> tuple[str, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} {key} must be a list of rule codes or prefixes")
        return normalize(value)

    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in FAIL_LEVELS:
        raise ConfigError(
            f"{where} fail-on must be one of {', '.join(FAIL_LEVELS)}, not {fail_on!r}"
        )
    min_steps = table.get("min-measured-steps")
    if min_steps is not None and (
        isinstance(min_steps, bool)
        or not isinstance(min_steps, int)
        or not 0 <= min_steps <= MAX_MIN_STEPS
    ):
        raise ConfigError(
            f"{where} min-measured-steps must be an integer from 0 to {MAX_MIN_STEPS:,}"
        )
    thresholds = table.get("thresholds", {})
    if not isinstance(thresholds, dict) or not all(
        isinstance(v, dict) for v in thresholds.values()
    ):
        raise ConfigError(
            f"{where} thresholds must be tables: [tool.advisor.thresholds.CODE] name = value"
        )
    return Config(
        select=selectors("select"),
        extend_select=selectors("extend-select") or (),
        ignore=selectors("ignore") or (),
        fail_on=fail_on,
        min_measured_steps=min_steps,
        thresholds={str(code).upper(): dict(values) for code, values in thresholds.items()},
        source=source,
    )


def parse_threshold_options(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``CODE.name=value`` options from the command line."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        code, dot, name = key.strip().partition(".")
        if not sep or not dot or not code or not name:
            raise UsageError(
                f"--threshold {item!r}: expected CODE.name=value, e.g. M108.warn_fraction=0.15"
            )
        out.setdefault(code.upper(), {})[name.strip()] = _parse_scalar(raw.strip())
    return out


def _parse_scalar(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def resolve(rules: Sequence[Any], file: Config, cli: Config) -> Resolved:
    """Merge defaults < file < command line, and check every selector and threshold."""
    codes = [r.code for r in rules]
    for origin, cfg in ((file.source or "configuration", file), ("command line", cli)):
        for group in (cfg.select or (), cfg.extend_select, cfg.ignore):
            validate(group, codes, origin)
    enabled = select_codes(codes, [Layer(("ALL",)), file.layer(), cli.layer()])
    by_code = {r.code: r for r in rules}
    thresholds: dict[str, dict[str, Any]] = {}
    for origin, cfg in ((file.source or "configuration", file), ("--threshold", cli)):
        for code, values in cfg.thresholds.items():
            rule = by_code.get(code)
            if rule is None:
                raise _threshold_error(origin, f"unknown rule code {code!r}", cli is cfg)
            for name, value in values.items():
                if name not in rule.params:
                    known = ", ".join(rule.params) or "none"
                    raise _threshold_error(
                        origin,
                        f"{code} has no parameter {name!r} (parameters: {known})",
                        cli is cfg,
                    )
                default = rule.params[name]
                if isinstance(default, (int, float)) and (
                    isinstance(value, bool) or not isinstance(value, (int, float))
                ):
                    raise _threshold_error(
                        origin, f"{code}.{name} must be a number, not {value!r}", cli is cfg
                    )
                if isinstance(value, (int, float)) and not finite_number(value):
                    raise _threshold_error(
                        origin,
                        f"{code}.{name} must be a finite number, not {number_text(value)}",
                        cli is cfg,
                    )
                thresholds.setdefault(code, {})[name] = value
    layers = [file, cli]
    return Resolved(
        codes=enabled,
        select=list(
            cli.select
            if cli.select is not None
            else file.select
            if file.select is not None
            else ("ALL",)
        ),
        extend_select=list(file.extend_select) + list(cli.extend_select),
        ignore=list(file.ignore) + list(cli.ignore),
        fail_on=next((c.fail_on for c in reversed(layers) if c.fail_on), DEFAULT_FAIL_ON),
        min_measured_steps=next(
            (c.min_measured_steps for c in reversed(layers) if c.min_measured_steps is not None),
            DEFAULT_MIN_STEPS,
        ),
        thresholds=thresholds,
        config_file=file.source,
    )


def _threshold_error(origin: str, reason: str, from_cli: bool) -> Exception:
    if from_cli:
        return UsageError(f"{origin}: {reason}")
    return ConfigError(f"{origin}: [tool.advisor.thresholds] {reason}")
