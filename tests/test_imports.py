"""Import hygiene: the headless parts never pull the heavy or optional libraries."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # trains a model or starts a process

HEAVY_OPTIONAL = ["textual", "matplotlib", "pandas", "boto3", "botocore", "moto", "xprof", "mlflow"]


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_advisor_is_light():
    modules = loaded_after("import advisor")
    for name in HEAVY_OPTIONAL + ["tensorflow", "keras", "jax", "torch"]:
        assert name not in modules, f"import advisor imported {name}"


def test_import_advisor_loads_no_rule_validation():
    """Rule files are parsed (YAML) and validated (pydantic) when rules load, not on import."""
    modules = loaded_after("import advisor")
    for name in ("pydantic", "yaml", "advisor.diagnosis.rules", "advisor.diagnosis.rule_model"):
        assert name not in modules, f"import advisor imported {name}"


def test_collectors_do_not_import_optional_libraries():
    modules = loaded_after(
        "import advisor; advisor.AdvisorCallback; import advisor.collectors.registry"
    )
    for name in HEAVY_OPTIONAL:
        assert name not in modules, f"the collectors imported {name}"


def test_cli_entry_point_is_light():
    modules = loaded_after("import advisor.cli.main")
    for name in HEAVY_OPTIONAL + ["tensorflow", "keras"]:
        assert name not in modules, f"the CLI entry point imported {name}"


def test_s3_options_and_cloud_modules_load_boto3_only_when_they_call_aws():
    modules = loaded_after(
        "import advisor; advisor.AdvisorCallback(runs_dir='s3://bucket/runs', pricing='aws', "
        "cloudwatch_namespace='Advisor'); import advisor.cloud.spool, advisor.cloud.pricing, "
        "advisor.cloud.s3data, advisor.cloud.sagemaker, advisor.cloud.cloudwatch, "
        "advisor.collectors.sinks.cloudwatch"
    )
    for name in ("boto3", "botocore"):
        assert name not in modules, (
            f"building the callback or importing advisor.cloud imported {name}"
        )


def test_integrations_load_their_libraries_only_when_used():
    """Notebook API, custom-loop tracking and MLflow collector import pandas / MLflow on call."""
    modules = loaded_after(
        "import advisor; advisor.runs_frame; advisor.track; advisor.tracked; "
        "import advisor.collectors.sinks.mlflow, advisor.integrations.mlflow_export, "
        "advisor.dataframes; "
        "from advisor.collectors.registry import build_collectors; "
        "from advisor.collectors.options import AdvisorOptions; "
        "build_collectors(AdvisorOptions(mlflow=True))"
    )
    for name in HEAVY_OPTIONAL + ["tensorflow", "keras", "jax", "torch"]:
        assert name not in modules, f"the integrations imported {name}"


def test_tui_headless_parts_do_not_import_textual():
    """The TUI's data door, view model and the service parts it uses load no textual (harlequin's
    habit): only the screens and widgets do, when the app is made."""
    modules = loaded_after(
        "import advisor.tui, advisor.tui.model, advisor.tui.data, advisor.cli.tui, "
        "advisor.service.listing, advisor.service.live"
    )
    for name in HEAVY_OPTIONAL + ["textual_plotext", "plotext"]:
        assert name not in modules, f"a headless part of the TUI imported {name}"


def test_backend_whatif_command_loads_no_framework():
    """``advisor backends`` measures in child processes: the parent imports no backend itself."""
    modules = loaded_after(
        "import advisor.cli.backends, advisor.experiments.backends, "
        "advisor.experiments.backends.files"
    )
    for name in HEAVY_OPTIONAL + ["tensorflow", "keras", "jax", "torch"]:
        assert name not in modules, f"the backend what-if's parent imported {name}"
