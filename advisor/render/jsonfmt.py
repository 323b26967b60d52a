"""JSON: the report model as it is. One run → one Report object; several → a JSON array."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.diagnosis.report import Report


def render_many(reports: list[Report], **_: Any) -> str:
    if len(reports) == 1:
        return reports[0].model_dump_json(indent=2) + "\n"
    return json.dumps([r.model_dump(mode="json") for r in reports], indent=2) + "\n"
