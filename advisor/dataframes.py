"""Rows → a pandas DataFrame with units in ``df.attrs``: the one place pandas is imported.

A leaf every layer may use (like :mod:`advisor.numbers`): report objects' ``to_frame()`` methods
and the notebook API (:mod:`advisor.notebook`) call :func:`to_frame`; pandas is imported only then,
so ``import advisor`` never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.errors import UsageError

INSTALL_HINT = "pandas is not installed: pip install 'keras-advisor[pandas]'"


def pandas() -> Any:
    """The pandas module, or a one-line :class:`UsageError` saying how to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return pd


def to_frame(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    units: Mapping[str, str] | None = None,
    **attrs: Any,
) -> Any:
    """A DataFrame of ``rows`` with ``columns`` in that order; ``df.attrs["units"]`` maps column →
    unit.

    Missing values are ``None``/NaN, never zero. ``attrs`` are copied into ``df.attrs`` too.
    """
    pd = pandas()
    frame = pd.DataFrame([[row.get(c) for c in columns] for row in rows], columns=list(columns))
    frame.attrs["units"] = {c: u for c, u in (units or {}).items() if c in frame.columns and u}
    frame.attrs.update(attrs)
    return frame
