"""A large JSON object read keeping a bounded number of entries of each list and mapping.

A trace summary may be up to the store's 64 MiB limit, and parsing one whole (a million top ops
as Python objects, then as pydantic models) takes gigabytes. :func:`parse_json_bounded` keeps
what a reader can use (the first entries, or those with the most of a field) and counts the
rest, decoding in C a chunk at a time, so that memory follows what is kept, not the file. The
limits of :mod:`advisor.store.limits` (depth, number ranges, non-finite numbers, surrogates)
apply to what is kept.
"""

from __future__ import annotations

import heapq
import json
import json.scanner
import math
import re
from typing import Any

from advisor.bounded_reads import BadInput
from advisor.errors import first_line
from advisor.store.limits import MAX_DEPTH, NONFINITE_DECODER, checked_value, parse_json

KEEP_ITEMS = 1000  # entries kept of one list or mapping by parse_json_bounded
_SPACE = " \t\n\r"


def parse_json_bounded(
    raw: bytes, keep: int = KEEP_ITEMS, largest: dict[str, str] | None = None
) -> tuple[Any, dict[str, int], list[str]]:
    """A JSON object parsed keeping at most ``keep`` entries of each list or mapping under its
    top-level keys, read one entry at a time so that memory follows what is kept, not the file:
    a list of a million entries costs the time to scan it and the memory of ``keep``. Under a
    key of ``largest`` (key → a numeric field of its entries) the entries with the largest field
    are kept, otherwise the first. Returns the value, how many entries each key dropped, and
    the top-level keys that held a non-finite number (read as None). :class:`BadInput` as
    :func:`parse_json`; a document that is not an object is parsed whole by it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeError:
        raise BadInput("not UTF-8 text") from None
    nonfinite: list[str] = []
    start = _space(text, 0)
    if not text.startswith("{", start):
        return parse_json(raw, nonfinite), {}, nonfinite
    scan: Any = json.scanner.make_scanner(NONFINITE_DECODER)  # type: ignore[attr-defined,arg-type]
    out: dict[str, Any] = {}
    dropped: dict[str, int] = {}
    try:
        i = _space(text, start + 1)
        while text[i] != "}":
            key, i = scan(text, i)
            if not isinstance(key, str) or text[_space(text, i)] != ":":
                raise StopIteration(i)
            i = _space(text, _space(text, i) + 1)
            opening = text[i]
            if opening in "[{":
                out[key], i, dropped_here = _entries(scan, text, i, keep, (largest or {}).get(key))
                if dropped_here:
                    dropped[key] = dropped_here
            else:
                out[key], i = scan(text, i)
            i = _space(text, i)
            if text[i] == ",":
                i = _space(text, i + 1)
            elif text[i] != "}":
                raise StopIteration(i)
        if _space(text, i + 1) != len(text):
            raise StopIteration(i + 1)
    except (StopIteration, IndexError, json.JSONDecodeError) as exc:
        where = exc.value if isinstance(exc, StopIteration) else len(text)
        raise BadInput(f"not JSON (invalid at character {where})") from None
    except RecursionError:
        raise BadInput(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise BadInput(f"not JSON ({first_line(exc, 80)})") from None
    value = checked_value(out, check_numbers=True, fix_strings=True, nonfinite=nonfinite)
    return value, dropped, nonfinite


def _space(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


class _Kept:
    """The entries of one list or mapping kept so far: the first ``keep``, or the ``keep`` with
    the largest ``largest`` field (a heap, smallest rank first)."""

    def __init__(self, keep: int, largest: str | None) -> None:
        self.keep, self.largest = keep, largest
        self.first: list[Any] = []
        self.ranked: list[tuple[float, int, Any]] = []
        self.seen = 0

    def add(self, entries: list[Any], mapping: bool) -> None:
        start, self.seen = self.seen, self.seen + len(entries)
        if self.largest is None:
            room = self.keep - len(self.first)
            if room > 0:
                self.first.extend(entries[:room])
            return
        field, ranked = self.largest, self.ranked
        items = [entry[1] for entry in entries] if mapping else entries
        written = [item.get(field) if type(item) is dict else None for item in items]
        ranks: list[float] = [
            r if (type(r) is float or type(r) is int) else -math.inf for r in written
        ]
        filling = max(0, min(len(entries), self.keep - len(ranked)))
        for j in range(filling):
            heapq.heappush(ranked, (ranks[j], -(start + j + 1), entries[j]))
        floor = ranked[0][0] if ranked else -math.inf
        # only entries above the smallest kept can enter: found in one comprehension
        for j in [j for j in range(filling, len(entries)) if ranks[j] > floor]:
            if ranks[j] > ranked[0][0]:
                heapq.heapreplace(ranked, (ranks[j], -(start + j + 1), entries[j]))

    def value(self, mapping: bool) -> tuple[Any, int]:
        kept = self.first
        if self.largest is not None:
            kept = [entry for _, _, entry in sorted(self.ranked, reverse=True)]
        return (dict(kept) if mapping else kept), self.seen - len(kept)


_CHUNK = 256 * 1024  # characters of entries decoded in one C call
# Where the next entry may begin: a comma before an entry's first character.
_CUTS = {c: re.compile(r",[ \t\n\r]*" + re.escape(c)) for c in '{["'}
_ANY_CUT = re.compile(",")


def _entries(scan: Any, text: str, i: int, keep: int, largest: str | None) -> tuple[Any, int, int]:
    """The list or mapping opening at ``text[i]``, at most ``keep`` entries of it; its end and
    how many entries were dropped. Entries are decoded a chunk at a time in C, cut before what
    looks like the next entry; a cut inside an entry leaves text that does not parse, and then
    entries are read one at a time for a while (twice as long after each miss, so a list the
    cuts do not fit costs at most twice). Memory follows the chunk, not the file."""
    mapping = text[i] == "{"
    opening, close = ("{", "}") if mapping else ("[", "]")
    kept = _Kept(keep, largest)
    i = _space(text, i + 1)
    cuts = _CUTS.get('"' if mapping else text[i], _ANY_CUT)
    single, penalty = 0, 1  # entries to read one at a time before the next chunk
    while text[i] != close:
        found = cuts.search(text, i + _CHUNK) if single == 0 else None
        if found is not None:
            try:
                chunk = NONFINITE_DECODER.decode(opening + text[i : found.start()] + close)
            except RecursionError:
                raise BadInput(f"nested deeper than {MAX_DEPTH} levels") from None
            except ValueError:  # cut inside an entry
                penalty *= 2
                single = penalty
            else:
                kept.add(list(chunk.items()) if mapping else chunk, mapping)
                i = _space(text, found.start() + 1)
                continue
        single = max(0, single - 1)
        if mapping:
            key, i = scan(text, i)
            i = _space(text, i)
            if not isinstance(key, str) or text[i] != ":":
                raise StopIteration(i)
            i = _space(text, i + 1)
        item, i = scan(text, i)
        kept.add([(key, item) if mapping else item], mapping)
        i = _space(text, i)
        if text[i] == ",":
            i = _space(text, i + 1)
        elif text[i] != close:
            raise StopIteration(i)
    value, dropped = kept.value(mapping)
    return value, i + 1, dropped
