"""`advisor tui` on a 1,000-run store (half in sweeps), and live against a steady writer.

Builds a synthetic store through the real RunWriter — 500 plain runs and 100 sweeps of 5
configurations — then measures, each ``--repeats`` times (medians reported):

- **interactive**: from ``make_app`` to the Runs table on screen *and* a key press (cursor down)
  answered, headless (Textual's ``run_test``), then until every row is in the table (rows after
  the first 100 are added in chunks after each refresh); and end to end in a real terminal:
  ``advisor tui`` started in tmux until ``capture-pane`` shows "1,000 runs" (Python start-up and
  imports included). Target: < 1.5 s;
- what eager loading would cost instead: ``RunService.runs()`` (read and derive every run), and the
  background fill of samples/s, samples/$ and top finding for every row (diagnosis included);
- **scrolling**: 40 page-downs through the table while the background fill runs, each press timed
  from send to handled (median and worst, ms);
- **live**: a writer thread appends 10 records/s for ``--live-s`` seconds; the lag from a record's
  write to the Live screen applying a snapshot that contains it (median and worst), the updates
  applied against records written and polls made.

Run: ``python benchmarks/tui_load.py`` (needs the ``tui`` extra and tmux).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from advisor.store.schema import EpochRecord, HostSample, WindowRecord
from advisor.store.writer import RunWriter

EPOCHS, STEPS = 3, 100


def write_run(root: Path, run_id: str, sweep_id: str | None, workers: int, created: float) -> None:
    tags = (
        {"scale.strategy": "mirrored", "scale.workers": str(workers)}
        if sweep_id
        else {"team": "bench"}
    )
    writer = RunWriter(
        root,
        run_id,
        manifest={
            "created": created,
            "sweep_id": sweep_id,
            "price_per_hour": 1.0,
            "strategy": "MirroredStrategy",
            "replicas": workers,
            "tags": tags,
        },
    )
    t = created
    for epoch in range(EPOCHS):
        seconds = 10.0 / workers
        t += seconds
        writer.write(
            WindowRecord(
                t=t,
                epoch=epoch,
                seconds=seconds,
                steps=STEPS,
                samples=STEPS * 64,
                step_begin=epoch * STEPS,
                step_end=(epoch + 1) * STEPS,
                step_count=STEPS,
                step_time_mean=seconds / STEPS,
                step_time_std=0.0,
                step_time_max=seconds / STEPS,
            )
        )
        writer.write(HostSample(t=t, cpu_percent=[40.0, 60.0]))
        writer.write(
            EpochRecord(
                t=t,
                epoch=epoch,
                seconds=seconds,
                train_seconds=seconds,
                steps=STEPS,
                samples=STEPS * 64,
            )
        )
    writer.close("finished")


def build(root: Path, runs: int) -> None:
    plain = runs // 2
    base = time.time() - 86400.0
    for i in range(plain):
        write_run(root, f"r{i:05d}", None, 1, base + i)
    for i in range(runs - plain):
        sweep, point = divmod(i, 5)
        write_run(root, f"s{sweep:04d}-n{2**point}", f"s{sweep:04d}", 2**point, base + plain + i)


async def interactive(root: Path, pages: int) -> dict[str, float]:
    from textual.widgets import DataTable

    from advisor.tui.app import make_app

    t0 = time.perf_counter()
    app = make_app(runs_dir=root, config=None, export_dir=tempfile.mkdtemp())
    out: dict[str, float] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        while not (
            isinstance(getattr(app.screen, "views", None), dict)
            and app.screen.views
            and app.screen.query_one("#runs", DataTable).row_count > 0
        ):
            await asyncio.sleep(0.005)
        out["table"] = time.perf_counter() - t0
        table = app.screen.query_one("#runs", DataTable)
        # The key is sent without waiting for the app to be idle (Pilot.press would also wait for
        # the background fill's messages): the clock stops when the cursor has moved.
        press = asyncio.create_task(pilot.press("down"))
        while table.cursor_row != 1:
            await asyncio.sleep(0.002)
        out["interactive"] = time.perf_counter() - t0
        await press
        while table.row_count < len(app.screen.views):
            await asyncio.sleep(0.005)
        out["all_rows"] = time.perf_counter() - t0
        presses = []
        for _ in range(pages):
            start = time.perf_counter()
            row = table.cursor_row
            press = asyncio.create_task(pilot.press("pagedown"))
            while table.cursor_row == row and row < table.row_count - 1:
                await asyncio.sleep(0.001)
            presses.append(time.perf_counter() - start)
            await press
        out["page_median_ms"] = 1000 * statistics.median(presses)
        out["page_max_ms"] = 1000 * max(presses)
        screen = app.screen
        while screen.left or screen._queue:
            await asyncio.sleep(0.02)
        out["filled"] = time.perf_counter() - t0
        await pilot.press("q")
    return out


def eager(root: Path) -> float:
    from advisor.service import RunService

    t0 = time.perf_counter()
    RunService(root).runs()
    return time.perf_counter() - t0


def tmux_first_screen(root: Path, runs: int, attempt: int) -> float | None:
    """``advisor tui`` in a real terminal until the status line shows every run."""
    if shutil.which("tmux") is None:
        return None
    exe = Path(sys.executable).with_name("advisor")
    base = ["tmux", "-L", f"advisor-bench-{os.getpid()}-{attempt}"]
    want = f"{runs:,} runs"
    t0 = time.perf_counter()
    subprocess.run(
        [
            *base,
            "new-session",
            "-d",
            "-s",
            "b",
            "-x",
            "160",
            "-y",
            "48",
            f"env -u COLUMNS -u LINES {exe} --runs-dir {root} tui",
        ],
        check=True,
        timeout=20,
    )
    try:
        while time.perf_counter() - t0 < 60:
            shown = subprocess.run(
                [*base, "capture-pane", "-p", "-t", "b"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout
            if want in shown:
                return time.perf_counter() - t0
            time.sleep(0.02)
        return None
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, timeout=20, check=False)


async def live(root: Path, seconds: float, poll_s: float) -> dict[str, float]:
    from advisor.tui.app import make_app

    writer = RunWriter(root, "live-bench", manifest={"created": time.time()})
    written: list[float] = [time.perf_counter()]  # the start record
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            if i % 10 == 0:
                writer.write(
                    WindowRecord(
                        t=time.time(),
                        epoch=0,
                        seconds=1.0,
                        steps=10,
                        samples=640,
                        step_begin=i,
                        step_end=i + 10,
                    )
                )
            else:
                writer.write(HostSample(t=time.time(), cpu_percent=[50.0]))
            written.append(time.perf_counter())
            time.sleep(0.1)

    app = make_app("live-bench", runs_dir=root, config=None, poll_s=poll_s)
    lags: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        thread = threading.Thread(target=write)
        thread.start()
        seen = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or seen < len(written):
            snap = screen.snapshot
            if snap is not None and snap.records > seen:
                now = time.perf_counter()
                lags += [now - written[k] for k in range(seen, min(snap.records, len(written)))]
                seen = snap.records
            if time.perf_counter() >= end:
                stop.set()
            await asyncio.sleep(0.005)
        thread.join()
        out = {
            "records": float(len(written)),
            "updates": float(screen.updates),
            "polls": float(screen.polls),
            "lag_median_ms": 1000 * statistics.median(lags),
            "lag_max_ms": 1000 * max(lags),
        }
        writer.close()
        await pilot.press("q")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--live-s", type=float, default=10.0)
    parser.add_argument(
        "--poll",
        type=float,
        default=0.5,
        help="the live screen's poll interval (default of advisor tui)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        t0 = time.perf_counter()
        build(root, args.runs)
        print(
            f"store: {args.runs:,} runs ({args.runs - args.runs // 2} in sweeps of 5) written in "
            f"{time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}"
        )
        results = [asyncio.run(interactive(root, args.pages)) for _ in range(args.repeats)]
        tmux = [tmux_first_screen(root, args.runs, i) for i in range(args.repeats)]
        eager_s = [eager(root) for _ in range(args.repeats)]

        def med(key: str) -> float:
            return statistics.median(r[key] for r in results)

        print("\n| what | median | worst |\n|---|---:|---:|")
        print(
            f"| Runs table on screen, {args.runs:,} runs listed (headless) | "
            f"{med('table'):.2f} s | {max(r['table'] for r in results):.2f} s |"
        )
        print(
            f"| … and a key press answered (interactive) | {med('interactive'):.2f} s | "
            f"{max(r['interactive'] for r in results):.2f} s |"
        )
        print(
            "| … every row in the table (added in chunks after each refresh) | "
            f"{med('all_rows'):.2f} s | {max(r['all_rows'] for r in results):.2f} s |"
        )
        got = [t for t in tmux if t is not None]
        if got:
            print(
                f"| `advisor tui` in tmux until the screen shows '{args.runs:,} runs' | "
                f"{statistics.median(got):.2f} s | {max(got):.2f} s |"
            )
        print(
            f"| page-down while the rows fill in (per press) | {med('page_median_ms'):.1f} ms | "
            f"{max(r['page_max_ms'] for r in results):.1f} ms |"
        )
        print(
            f"| every row's samples/s, samples/$ and top finding filled in (background) | "
            f"{med('filled'):.1f} s | {max(r['filled'] for r in results):.1f} s |"
        )
        print(
            f"| for comparison: `RunService.runs()` (eager: read and derive every run) | "
            f"{statistics.median(eager_s):.1f} s | {max(eager_s):.1f} s |"
        )
        print(
            "| peak RSS of this process | "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB | |"
        )

        lv = asyncio.run(live(root, args.live_s, args.poll))
        print(
            f"\nlive, a writer at 10 records/s for {args.live_s:.0f} s, poll every {args.poll} s: "
            f"{lv['records']:.0f} records written and all shown; "
            f"{lv['updates']:.0f} screen updates for {lv['polls']:.0f} polls; "
            f"lag from write to screen median {lv['lag_median_ms']:.0f} ms, "
            f"worst {lv['lag_max_ms']:.0f} ms"
        )


if __name__ == "__main__":
    main()
