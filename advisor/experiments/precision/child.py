"""One dtype policy of the precision what-if in a fresh process: ``python -m
advisor.experiments.precision.child --policy mixed_bfloat16 <the backend child's arguments>``.

The backend what-if's child (``experiments/backends/child.py``) does everything — rebuild the
model, compile, warm up, answer rounds — with the model moved to the policy first."""

from __future__ import annotations

import os
import sys
from typing import Any


def split_policy(argv: list[str]) -> tuple[str, list[str]]:
    """(the policy, the other arguments)."""
    if "--policy" not in argv:
        raise SystemExit("--policy is needed")
    at = argv.index("--policy")
    return argv[at + 1], argv[:at] + argv[at + 2 :]


def main(argv: list[str] | None = None) -> int:
    from advisor.experiments.backends import child
    from advisor.experiments.precision.policy import with_policy

    policy, rest = split_policy(list(sys.argv[1:] if argv is None else argv))

    def rebuild(model: Any, keras: Any) -> Any:
        return with_policy(model, policy, keras)

    return child.main(rest, rebuild=rebuild)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
