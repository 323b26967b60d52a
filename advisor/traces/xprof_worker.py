"""Child process that runs XProf's converter on xplane files, under a memory limit.

    python -m advisor.traces.xprof_worker OUT_DIR FILE.xplane.pb [...]

XProf's converter is native code: a huge or damaged profile can take all memory, crash the
process or run for long. The summariser therefore runs it here, in a child with an address-space
limit (``ADVISOR_TRACE_MEMORY_MB``) and a wall-clock timeout set by the parent, and reads back
what this process wrote into OUT_DIR: one ``<tool>.json`` per XProf tool, ``events.json`` (the
timeline analysis of :mod:`advisor.traces.events`) and ``meta.json``.

Exit codes: 0 done; 3 the files are not readable profiles; 4 xprof is not installed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats")
TIMELINE_TOOL = "trace_viewer"
EXIT_UNREADABLE = 3
EXIT_NO_XPROF = 4


def _limit_memory() -> None:
    megabytes = int(os.environ.get("ADVISOR_TRACE_MEMORY_MB", "0") or 0)
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: run without a limit
        pass


def _as_text(data: object) -> str | None:
    if data is None:
        return None
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return str(data)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(
            "usage: python -m advisor.traces.xprof_worker OUT_DIR FILE.xplane.pb...",
            file=sys.stderr,
        )
        return 2
    out = Path(argv[0])
    paths = argv[1:]
    _limit_memory()
    t0 = time.perf_counter()
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError as exc:
        print(f"xprof is not installed ({exc})", file=sys.stderr)
        return EXIT_NO_XPROF
    meta: dict[str, object] = {"import_s": time.perf_counter() - t0, "tools_s": {}}
    try:
        from xprof import version as xprof_version

        meta["xprof_version"] = getattr(xprof_version, "__version__", None)
    except Exception:  # noqa: BLE001 — the version is only informative
        meta["xprof_version"] = None
    params = {"use_saved_result": False}
    for tool in TOOLS:
        t1 = time.perf_counter()
        data, _ = raw_to_tool_data.xspace_to_tool_data(paths, tool, params)
        text = _as_text(data)
        if not text:
            print(
                f"XProf could not read {', '.join(paths)} (not a complete XSpace profile)",
                file=sys.stderr,
            )
            return EXIT_UNREADABLE
        (out / f"{tool}.json").write_text(text, encoding="utf-8")
        meta["tools_s"][tool] = time.perf_counter() - t1  # type: ignore[index]
    _write(out / "meta.json", meta)
    # The timeline is the heaviest part: failures here leave the summaries above usable.
    t1 = time.perf_counter()
    try:
        data, _ = raw_to_tool_data.xspace_to_tool_data(paths, TIMELINE_TOOL, params)
        text = _as_text(data)
        if text:
            from advisor.traces.events import analyse_events

            events = analyse_events(json.loads(text))
            del text
            _write(out / "events.json", events)
    except MemoryError:
        meta["events_error"] = "the timeline did not fit in the memory limit"
    except Exception as exc:  # noqa: BLE001 — the tables above stay usable without the timeline
        meta["events_error"] = f"{type(exc).__name__}: {exc}"
    meta["tools_s"][TIMELINE_TOOL] = time.perf_counter() - t1  # type: ignore[index]
    _write(out / "meta.json", meta)
    return 0


def _write(path: Path, payload: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
