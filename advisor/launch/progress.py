"""The sweep's live display: configuration, state, elapsed time and the last measured throughput.

On a terminal it is a rich table redrawn in place; piped or in CI it prints one line when a
configuration starts and one when it ends. While a configuration runs, its throughput is read
from the run's own worker files (the last measurement window); when it ends, the display shows the
run's samples/s as every view derives it (``measured``, which ``advisor scale`` gives: launchers do
not import the analysis), so the line and ``advisor report`` print the same figure.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing_extensions import Self

from advisor.store.sweep import ConfigRecord, SweepRecord

# Strategies whose every worker is fed (and counts) the global batch: one worker's rate is the
# job's.
GLOBAL_BATCH_STRATEGIES = ("multiworker", "mirrored", "single")


def _last_window(file: Path) -> dict[str, Any] | None:
    """The latest full measured window in the file's tail (a window cut short at an epoch end
    says little about the rate)."""
    from advisor.store.limits import BadInput, open_regular, parse_json

    try:
        with os.fdopen(open_regular(file), "rb") as fh:  # a FIFO or a device is not waited on
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16_000))
            lines = fh.read(16_000).splitlines()
    except (OSError, BadInput):
        return None
    windows = []
    for line in lines:
        if b'"window"' not in line:
            continue
        try:
            rec = parse_json(line)
            if (
                isinstance(rec, dict)
                and rec.get("type") == "window"
                and not rec.get("warmup")
                and float(rec.get("seconds") or 0) > 0
            ):
                windows.append(rec)
        except (BadInput, TypeError, ValueError):
            continue
    if not windows:
        return None
    longest = max(float(w["seconds"]) for w in windows)
    return next(w for w in reversed(windows) if float(w["seconds"]) >= 0.5 * longest)


def last_throughput(run_dir: Path, strategy: str) -> float | None:
    """Samples/s of the job in its latest window, from the worker files written so far."""
    rates = []
    for file in sorted(run_dir.glob("worker-*.jsonl")):
        rec = _last_window(file)
        if rec and rec.get("samples") is not None:
            try:
                rates.append(float(rec["samples"]) / float(rec["seconds"]))
            except (TypeError, ValueError, OverflowError):
                continue
    if not rates:
        return None
    return rates[0] if strategy in GLOBAL_BATCH_STRATEGIES else sum(rates)


class Display:
    """Shows a sweep as it runs. ``live=None`` picks a live table only on a terminal."""

    def __init__(
        self,
        record: SweepRecord,
        runs_dir: Path,
        live: bool | None = None,
        measured: Callable[[Path], float | None] | None = None,
    ) -> None:
        self.record = record
        self.measured = measured
        self.runs_dir = runs_dir
        self.live_mode = sys.stderr.isatty() if live is None else live
        self._elapsed: dict[str, float] = {  # a resumed sweep's kept configurations
            r.run_id: r.seconds for r in record.configs if r.seconds is not None
        }
        self._rate: dict[str, float] = {}
        self._last_read = 0.0
        self._live: Any = None
        self._console: Any = None

    def __enter__(self) -> Self:
        from rich.console import Console

        self._console = Console(stderr=True)
        if self.live_mode:
            from rich.live import Live

            self._live = Live(
                self._table(), console=self._console, refresh_per_second=4, transient=False
            )
            self._live.__enter__()
        else:
            self._console.print(
                f"advisor scale: sweep {self.record.sweep_id}, "
                f"{len(self.record.configs)} configuration(s)",
                highlight=False,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(*exc)

    def start(self, rec: ConfigRecord) -> None:
        self._elapsed[rec.run_id] = 0.0
        if self._live is None and self._console is not None:
            self._console.print(f"  {self._name(rec)}: running", highlight=False)
        self._refresh()

    def tick(self, rec: ConfigRecord, elapsed: float) -> None:
        self._elapsed[rec.run_id] = elapsed
        now = time.monotonic()
        if now - self._last_read >= 1.0:
            self._last_read = now
            rate = last_throughput(self.runs_dir / rec.run_id, rec.strategy)
            if rate is not None:
                self._rate[rec.run_id] = rate
        self._refresh()

    def finish(self, rec: ConfigRecord) -> None:
        rate = self._measured(self.runs_dir / rec.run_id)
        if rate is None:
            rate = last_throughput(self.runs_dir / rec.run_id, rec.strategy)
        if rate is not None:
            self._rate[rec.run_id] = rate
        if rec.seconds is not None:
            self._elapsed[rec.run_id] = rec.seconds
        if self._live is None and self._console is not None:
            line = f"  {self._name(rec)}: {rec.status} in {rec.seconds or 0:.1f} s"
            if rec.run_id in self._rate:
                line += f", {self._rate[rec.run_id]:,.0f} samples/s"
            if rec.reason:
                line += f" — {rec.reason}"
            self._console.print(line, highlight=False)
            if rec.hint:
                self._console.print(f"    hint: {rec.hint}", highlight=False)
        self._refresh()

    def _measured(self, run_dir: Path) -> float | None:
        """The ended run's samples/s from ``measured``; None when there is none (no run, no
        data)."""
        if self.measured is None or not run_dir.is_dir():
            return None
        try:
            return self.measured(run_dir)
        except Exception:  # noqa: BLE001 - a run that cannot be analysed shows its last window
            return None

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._table())

    @staticmethod
    def _name(rec: ConfigRecord) -> str:
        return f"{rec.strategy} ×{rec.workers}" + (
            f" (repeat {rec.repeat + 1})" if rec.repeat else ""
        )

    def _table(self) -> Any:
        from rich.table import Table

        style = {"finished": "green", "failed": "red", "running": "yellow"}
        table = Table(title=f"advisor scale · {self.record.sweep_id}", title_justify="left")
        for col, just in (
            ("configuration", "left"),
            ("state", "left"),
            ("elapsed", "right"),
            ("samples/s", "right"),
            ("note", "left"),
        ):
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        for rec in self.record.configs:
            elapsed = self._elapsed.get(rec.run_id)
            rate = self._rate.get(rec.run_id)
            note = rec.reason or ""
            table.add_row(
                self._name(rec),
                f"[{style.get(rec.status, 'dim')}]{rec.status}[/]",
                f"{elapsed:.1f} s" if elapsed is not None else "",
                f"{rate:,.0f}" if rate is not None else "",
                note[:60],
            )
        return table
