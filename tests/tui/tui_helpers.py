"""Helpers to drive the app headless (``App.run_test`` Pilot, run with ``asyncio.run`` so no
async test plugin is needed)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

SIZE = (150, 44)


def make(target: str | None = None, runs_dir: str | Path | None = "runs", **options: Any) -> Any:
    from advisor.tui.app import make_app

    options.setdefault("config", None)
    options.setdefault("export_dir", "exports")
    return make_app(target, runs_dir=runs_dir, **options)


async def settle(pilot: Any, rounds: int = 3) -> None:
    """Let workers finish and their messages land (not the live follower: it runs until the end)."""
    from textual.worker import WorkerCancelled, WorkerFailed

    for _ in range(rounds):
        for worker in [w for w in pilot.app.workers if w.group != "live" and not w.is_finished]:
            try:
                await worker.wait()
            except (WorkerCancelled, WorkerFailed):
                pass
        await pilot.pause(0.05)


async def until(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait (in the app's loop) until ``condition()`` holds; fail with a clear message if not."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.05)


def drive(
    app: Any, scenario: Callable[[Any], Awaitable[None]], size: tuple[int, int] = SIZE
) -> Any:
    """Run ``scenario(pilot)`` against the app headless; returns the app afterwards."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await scenario(pilot)

    asyncio.run(main())
    return app
