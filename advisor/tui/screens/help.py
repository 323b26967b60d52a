"""The help screen (``?``): the keys of the screen below and of the app, made from the same
bindings the footer and the command palette use, and the screen's own notes."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_NAMES = {
    "slash": "/",
    "space": "space",
    "question_mark": "?",
    "escape": "esc",
    "enter": "enter",
    "ctrl+p": "ctrl+p",
}


def key_label(key: str) -> str:
    return ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, title: str, bindings: list[Binding], notes: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.bindings = bindings
        self.notes = notes

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for binding in self.bindings:
            table.add_row(key_label(binding.key), binding.description)
        notes = Table(box=None, show_header=False, padding=(0, 2))
        notes.add_column(style="bold", no_wrap=True)
        notes.add_column()
        for what, how in self.notes:
            notes.add_row(what, how)
        with VerticalScroll(id="help"):
            yield Static(Text(f"advisor · {self.title_text} · keys", style="bold"))
            yield Static(table)
            if self.notes:
                yield Static(notes, classes="panel")
            yield Static(
                Text(
                    "The mouse works too: click a row, a header to sort, a key in the footer. "
                    "ctrl+p opens the command palette with every action. esc closes this.",
                    style="dim",
                ),
                classes="panel",
            )
