"""The filter line opened with ``/``: an input that filters as you type; Enter keeps the filter
and returns to the list, Escape clears it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """Hidden until opened; posts :class:`FilterBar.QueryChanged` on every edit."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_and_close", "Clear filter", show=False)
    ]

    @dataclass
    class QueryChanged(Message):
        query: str

    @dataclass
    class Done(Message):
        query: str

    def __init__(self, placeholder: str, *, id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id)
        self.display = False

    def open(self) -> None:
        self.display = True
        self.focus()

    def action_clear_and_close(self) -> None:
        self.value = ""
        self.post_message(self.QueryChanged(""))
        self._close()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.QueryChanged(event.value))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close()

    def _close(self) -> None:
        self.display = bool(self.value)
        self.post_message(self.Done(self.value))
