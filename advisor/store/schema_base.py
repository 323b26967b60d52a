"""The base of every run-directory model and record (``schema.py`` holds the contract)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# Wall-clock seconds since the epoch, within what every time function can format (year < 5000).
Timestamp = Annotated[float, Field(ge=0, le=1e11)]


class SchemaModel(BaseModel):
    # Newer writers of the same schema version may add fields: keep them, never fail on them.
    model_config = ConfigDict(extra="allow")


class Record(SchemaModel):
    type: str
    t: Timestamp
