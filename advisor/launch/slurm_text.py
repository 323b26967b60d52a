"""Asking Slurm's client commands, and reading what they print: ``Key=Value`` fields, run times,
GPUs in GRES strings. A leaf of the Slurm launcher (``slurm``, ``slurm_jobs``,
``slurm_partition`` and ``slurm_pending`` read through it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence

QUERY_TIMEOUT_S = 20
_GPU_GRES = re.compile(r"\bgpu(?::[^:,(\s]+)?:(\d+)")

Runner = Callable[[Sequence[str]], "str | None"]


def run_slurm(argv: Sequence[str]) -> str | None:
    """stdout of a Slurm client command; None where it is missing, fails or does not answer."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, *argv[1:]], capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_scontrol(text: str) -> dict[str, str]:
    """``scontrol -o show job`` → its ``Key=Value`` fields (a value ends at the next space)."""
    fields: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def run_seconds(text: str) -> float | None:
    """Slurm's ``RunTime`` / ``Elapsed`` / ``MaxTime`` (``[D-]HH:MM:SS``, ``MM:SS``) or
    ``ElapsedRaw`` (seconds) → seconds."""
    days, _, clock = text.strip().rpartition("-")
    try:
        parts = [int(p) for p in clock.split(":")]
        seconds = sum(v * 60**i for i, v in enumerate(reversed(parts)))
        return float(seconds + 86400 * int(days or 0))
    except ValueError:
        return None


def gpus_in_gres(text: str) -> int:
    """The most GPUs any node has, from ``sinfo -o %G`` lines (``(null)``, ``gpu:4``,
    ``gpu:a100:8(S:0-1)``); 0 where no line names GPUs."""
    return max((int(m) for m in _GPU_GRES.findall(text)), default=0)
