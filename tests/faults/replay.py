"""Replays corpus inputs in this process and prints one JSON result a line (run by
test_corpus.py in a subprocess with a hard timeout, so that a hang inside C code is caught).

    python tests/faults/replay.py expressions FILE
    python tests/faults/replay.py rules RUN_DIR RULE_FILE...
    python tests/faults/replay.py config RUN_DIR TOML_FILE...
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner


def outcome(args: list[str]) -> dict[str, Any]:
    from advisor.cli.main import cli

    result = CliRunner().invoke(cli, args)
    exc = result.exception
    crashed = exc is not None and not isinstance(exc, SystemExit)
    return {
        "code": result.exit_code,
        "output": result.output[-600:],
        "crash": f"{type(exc).__name__}: {exc}" if crashed else None,
    }


def expressions(file: Path) -> None:
    from advisor.diagnosis.expr import ExprError, compile_expr

    facts = ["pipeline.sequential_maps", "gpu.util.p95"]
    for source in file.read_text(encoding="utf-8").splitlines():
        if not source.strip() or source.startswith("#"):
            continue
        result: dict[str, Any] = {"source": source}
        try:
            expr = compile_expr(source, set(facts), {}, facts)
            result["value"] = repr(expr.evaluate({"pipeline.sequential_maps": 3}, {}))
        except ExprError as exc:
            result["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 — what the test must never see
            result["crash"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(result), flush=True)


def rules(run: str, files: list[str]) -> None:
    for file in files:
        folder = Path(tempfile.mkdtemp())
        shutil.copy(file, folder / Path(file).name)
        print(
            json.dumps({"file": file, **outcome(["check", run, "--rules-dir", str(folder)])}),
            flush=True,
        )


def config(run: str, files: list[str]) -> None:
    for file in files:
        print(json.dumps({"file": file, **outcome(["check", run, "--config", file])}), flush=True)


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    if kind == "expressions":
        expressions(Path(rest[0]))
    elif kind == "rules":
        rules(rest[0], rest[1:])
    else:
        config(rest[0], rest[1:])
