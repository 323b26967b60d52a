"""What a healthy multi-worker run of the suite may show about stragglers.

The suite's hosts are 2-core machines shared with the other test worker and, in the stress runs,
a busy core: one rank of a healthy run can really wait on the other (12% of a step was measured
beside a busy core), so "nobody is named" is not decisive there. What holds on any such host: the
wait is far from a deliberate straggler's (a rank sleeping 20-30 ms a step costs 67-75%), and a
straggler is named exactly when D651 fails on it.
"""

from __future__ import annotations

from typing import Any

FAR_BELOW_A_DELIBERATE_STRAGGLER = 0.35


def assert_healthy_workers(row: Any, findings: list[Any]) -> None:
    assert row.straggler_share is not None, "the wait between the ranks is measured"
    assert row.straggler_share < FAR_BELOW_A_DELIBERATE_STRAGGLER, (
        row.straggler,
        row.straggler_share,
    )
    named = [
        f
        for f in findings
        if f.code == "D651" and f.strategy == row.strategy and f.workers == row.workers
    ]
    assert bool(named) == (row.straggler is not None), (row.straggler, row.straggler_share, named)
