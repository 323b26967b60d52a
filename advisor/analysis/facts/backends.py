"""Backend what-if facts, from the ``backends`` record of a run: this model's training speed
(compute only, cached batches) on each Keras backend × compile mode, each in a fresh process,
against the run's own measured the same way (``advisor.experiments.backends``).

``backends.best`` is the fastest measured candidate other than the run's own;
``backends.best_speedup`` its samples/s ÷ the own's and ``backends.best_band`` the ± of that
ratio as a share. The candidates' rounds run interleaved with the own's, round *i* of each in
the same pass, so the speedup is the median of the paired ratios and its ± their band
(``advisor.noise``); a record whose rounds do not pair up (different counts) gives the
ratio of the medians and the two medians' relative bands added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor import noise
from advisor.analysis.registry import DeriveContext, Fact
from advisor.stats import median

if TYPE_CHECKING:
    from advisor.store.reader import Run

FACTS = (
    Fact(
        "backends.own",
        "",
        "the run's own backend and compile mode, e.g. tensorflow or jax+jit",
        "backends",
        "str",
    ),
    Fact(
        "backends.own_samples_per_s",
        "samples/s",
        "the run's own, measured in a fresh process on cached batches",
        "backends",
    ),
    Fact(
        "backends.measured",
        "",
        "backend × compile-mode candidates measured (the own included)",
        "backends",
    ),
    Fact("backends.seconds", "s", "wall time of the whole backend what-if", "backends"),
    Fact(
        "backends.best",
        "",
        "the fastest measured backend × compile mode other than the run's own",
        "backends",
        "str",
    ),
    Fact(
        "backends.best_speedup",
        "×",
        "backends.best's samples/s ÷ the run's own (median of paired rounds)",
        "backends",
    ),
    Fact(
        "backends.best_band",
        "fraction",
        "± of backends.best_speedup as a share (the paired ratios' band)",
        "backends",
    ),
    Fact(
        "backends.best_change",
        "",
        "what to set for backends.best, e.g. KERAS_BACKEND=jax, jit_compile=True",
        "backends",
        "str",
    ),
    Fact(
        "backends.best_compile_seconds",
        "s",
        "backends.best's first training step (tracing, compiling)",
        "backends",
    ),
    Fact(
        "backends.withheld",
        "",
        "why the backend what-if that ran gives no speedup (every candidate's reason, whole)",
        "backends",
        "str",
    ),
    Fact(
        "backends.portability",
        "",
        "each custom class: runs or blocked on each backend, the calls that block it (file, "
        "line, backends) and their keras.ops replacement, read from its source",
        "backends",
        "list",
    ),
    Fact(
        "backends.table",
        "",
        "every candidate: samples/s, band, speedup, compile seconds, status and reason",
        "backends",
        "list",
    ),
)


def _relative_band(rounds: list[float]) -> float | None:
    found = noise.band(rounds)
    return found.half_width / found.value if found is not None and found.value else None


def derive(run: Run, facts: dict[str, Any], ctx: DeriveContext) -> dict[str, Any]:
    from advisor.store.schema import BackendsRecord

    record = run.chief_last(BackendsRecord)
    if record is None:
        return {}
    out: dict[str, Any] = {"backends.own": record.own}
    if record.seconds is not None:
        out["backends.seconds"] = record.seconds
    if record.portability is not None:
        out["backends.portability"] = record.portability
    rows: list[dict[str, Any]] = []
    rounds_of: dict[str, list[float]] = {}
    for c in record.candidates:
        rounds = rounds_of[c.name] = [r for r in c.rounds or [] if r and r > 0]
        rows.append(
            {
                "candidate": c.name,
                "own": c.name == record.own,
                "status": c.status,
                "reason": c.reason,
                "samples_per_s": median(rounds) if c.status == "measured" and rounds else None,
                "band": _relative_band(rounds) if c.status == "measured" else None,
                "compile_seconds": c.compile_seconds,
                "jit_compile": c.jit_compile,
                "backend": c.backend,
                "speedup": None,
                "speedup_band": None,
            }
        )
    measured = [r for r in rows if r["samples_per_s"]]
    out["backends.measured"] = len(measured)
    own = next((r for r in measured if r["own"]), None)
    if own is not None:
        out["backends.own_samples_per_s"] = own["samples_per_s"]
        own_rounds = rounds_of[own["candidate"]]
        for row in measured:
            mine = rounds_of[row["candidate"]]
            ratios = (
                noise.paired(mine, own_rounds, lambda a, b: a / b)
                if len(mine) == len(own_rounds)
                else []
            )
            if ratios:
                row["speedup"], row["speedup_band"] = median(ratios), _relative_band(ratios)
            else:
                row["speedup"] = row["samples_per_s"] / own["samples_per_s"]
                if row["band"] is not None and own["band"] is not None:
                    row["speedup_band"] = row["band"] + own["band"]
        others = [r for r in measured if not r["own"]]
        if others:
            best = max(others, key=lambda r: r["speedup"])
            out["backends.best"], out["backends.best_speedup"] = best["candidate"], best["speedup"]
            out["backends.best_change"] = (
                f"KERAS_BACKEND={best['backend']}, jit_compile={best['jit_compile']}"
            )
            if best["speedup_band"] is not None:
                out["backends.best_band"] = best["speedup_band"]
            if best["compile_seconds"] is not None:
                out["backends.best_compile_seconds"] = best["compile_seconds"]
    withheld = _withheld(record, rows, own is not None)
    if withheld and "backends.best_speedup" not in out:
        out["backends.withheld"] = withheld
    out["backends.table"] = sorted(rows, key=lambda r: -(r["samples_per_s"] or -1.0))
    return out


def _withheld(record: Any, rows: list[dict[str, Any]], own_measured: bool) -> str | None:
    """Why a backend what-if that ran gives no speedup: its own or every other candidate was not
    measured; each one's reason in full."""
    failed = [r for r in rows if not r["samples_per_s"]]
    if not failed:
        return (
            "the backend what-if measured no candidate beside the run's own"
            if own_measured
            else None
        )
    what = (
        "measured none of the other candidates"
        if own_measured
        else f"could not measure the run's own ({record.own})"
    )
    reasons = "; ".join(
        f"{r['candidate']}: {r['status']}: {r['reason'] or 'no reason'}" for r in failed
    )
    return f"the backend what-if ran ({record.seconds or 0:.1f} s) but {what} — {reasons}"
