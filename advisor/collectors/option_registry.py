"""The table of options: every option of ``AdvisorCallback``, one row each, in signature order.

Each collector module declares its options (an ``OPTIONS`` tuple of
:class:`~advisor.collectors.option_spec.Option`) next to the code that uses them; this module only
collects them, group by group. ``AdvisorOptions``, the callback's docstring, the options table of
docs/collectors.md (``python -m advisor.collectors.option_docs``) and
tests/collectors/test_option_declarations.py are built from or checked against this table.
"""

from __future__ import annotations

from advisor.collectors import (
    baseline,
    goodput,
    manifest,
    memory,
    memory_batch,
    pipeline,
    profiler,
    selection,
    speed_of_light,
    throughput,
    whatif,
)
from advisor.collectors.option_spec import Option
from advisor.collectors.sinks import cloudwatch, mlflow
from advisor.collectors.telemetry import collector as telemetry

# (group, its options): the group names the collector (or the part of the run) they set.
GROUPS: tuple[tuple[str, tuple[Option, ...]], ...] = (
    ("run", manifest.RUN_OPTIONS),
    ("pricing", manifest.PRICING_OPTIONS),
    ("throughput", throughput.OPTIONS),
    ("collectors", selection.OPTIONS),
    ("baseline", baseline.OPTIONS),
    ("profiler", profiler.OPTIONS),
    ("telemetry", telemetry.OPTIONS),
    ("pipeline", pipeline.OPTIONS),
    ("memory", memory.OPTIONS + memory_batch.OPTIONS),
    ("goodput", goodput.OPTIONS),
    ("whatif", whatif.OPTIONS),
    ("speed_of_light", speed_of_light.OPTIONS),
    ("cloudwatch", cloudwatch.OPTIONS),
    ("mlflow", mlflow.OPTIONS),
)
OPTIONS: tuple[Option, ...] = tuple(option for _, group in GROUPS for option in group)
BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
OPTION_NAMES: tuple[str, ...] = tuple(BY_NAME)
GROUP_OF: dict[str, str] = {option.name: name for name, group in GROUPS for option in group}
# The old spellings (a DeprecationWarning, once per spelling and process) → the option's name.
DEPRECATED: dict[str, str] = {old: option.name for option in OPTIONS for old in option.old_names}
# run.json's config keeps the old keys, which readers of older runs know.
RECORDED_AS: dict[str, str] = {o.name: o.recorded_as for o in OPTIONS if o.recorded_as}

if len(OPTION_NAMES) != len(OPTIONS):
    raise RuntimeError("an option is declared twice")
