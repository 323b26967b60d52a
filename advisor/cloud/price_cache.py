"""A small on-disk cache of live prices, each entry with the date it was fetched and an expiry.

On-demand list prices change rarely (kept 7 days); spot prices move by the hour (kept 1 hour).
The file lives in the advisor's cache folder (``$ADVISOR_CACHE_DIR``, else
``$XDG_CACHE_HOME/advisor``, else ``~/.cache/advisor``) and is replaced atomically; a cache that
cannot be read or written is ignored, never an error.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ON_DEMAND_TTL_S = 7 * 24 * 3600
SPOT_TTL_S = 3600
CACHE_FILE = "prices.json"


def cache_dir() -> Path:
    """The advisor's cache folder (prices, S3 mirrors, spools)."""
    if os.environ.get("ADVISOR_CACHE_DIR"):
        return Path(os.environ["ADVISOR_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "advisor"


@dataclass(frozen=True)
class CachedPrice:
    usd_per_hour: float
    source: str  # e.g. "aws-pricing-api:us-east-1:2026-12-01"
    fetched: float  # seconds since the epoch
    expires: float
    detail: str | None = None

    def fresh(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) < self.expires


def cache_key(market: str, region: str, instance_type: str) -> str:
    return f"aws/{market}/{region}/{instance_type.lower()}"


class PriceCache:
    """Reads and writes ``prices.json`` (one dict of entries by :func:`cache_key`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else cache_dir() / CACHE_FILE

    def get(self, key: str) -> CachedPrice | None:
        entry = self._entries().get(key)
        if not isinstance(entry, dict):
            return None
        try:
            return CachedPrice(
                float(entry["usd_per_hour"]),
                str(entry["source"]),
                float(entry["fetched"]),
                float(entry["expires"]),
                entry.get("detail"),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, price: CachedPrice) -> None:
        entries = self._entries()
        entries[key] = asdict(price)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
            tmp.write_text(
                json.dumps({"version": 1, "entries": entries}, indent=1, sort_keys=True),
                encoding="utf-8",
            )
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only home or a full disk: live prices still work, uncached

    def _entries(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        entries = data.get("entries") if isinstance(data, dict) else None
        return dict(entries) if isinstance(entries, dict) else {}
