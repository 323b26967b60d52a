"""The advisor terminal app: screens over the application layer, navigation by typed messages.

``make_app(target, runs_dir=...)`` is what ``advisor tui`` runs and what tests build on fixture
stores. The Runs screen is always at the bottom of the stack; a run or a sweep given on the
command line opens its Findings (Live while it runs) or Scaling screen on top of it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType

from advisor.tui.data import TuiData, resolve
from advisor.tui.messages import Navigate
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.screens.compare import CompareScreen
from advisor.tui.screens.findings import FindingsScreen
from advisor.tui.screens.help import HelpScreen, key_label
from advisor.tui.screens.live import LiveScreen
from advisor.tui.screens.runs import RunsScreen
from advisor.tui.screens.scaling import ScalingScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    from advisor.diagnosis.config import Config
    from advisor.service.listing import Target

TITLES = {
    RunsScreen: "Runs",
    FindingsScreen: "Findings",
    ScalingScreen: "Scaling",
    LiveScreen: "Live",
    CompareScreen: "Compare",
}


class AdvisorApp(App[int]):
    """Runs, Findings, Scaling, Live and Compare screens over one store."""

    CSS_PATH = "app.tcss"
    TITLE = "advisor"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_app", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("e", "export", "Export"),
        Binding("p", "plots", "Plots"),
    ]

    def __init__(self, data: TuiData, target: Target, *, poll_s: float = 0.5) -> None:
        super().__init__()
        self.data = data
        self.target = target
        self.poll_s = poll_s
        self.last_input = (
            0.0  # monotonic time of the last key or mouse event (background work yields)
        )

    async def on_event(self, event: events.Event) -> None:
        if isinstance(
            event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)
        ):
            self.last_input = time.monotonic()
        await super().on_event(event)

    def on_mount(self) -> None:
        self.push_screen(RunsScreen())
        if self.target.kind == "run" and self.target.ref:
            view = "live" if self.data.run_status(self.target.ref) == "running" else "findings"
            self.post_message(Navigate(view, path=self.target.ref))  # type: ignore[arg-type]
        elif self.target.kind == "sweep":
            self.post_message(Navigate("scaling", sweep=self.target.ref))

    @on(Navigate)
    def _navigate(self, message: Navigate) -> None:
        if message.view == "findings" and message.path:
            self.push_screen(FindingsScreen(message.path))
        elif message.view == "live" and message.path:
            self.push_screen(LiveScreen(message.path))
        elif message.view == "scaling":
            sweep = message.sweep or (self.data.sweep_of(message.path) if message.path else None)
            self.push_screen(ScalingScreen(sweep))
        elif message.view == "compare":
            self.push_screen(CompareScreen(message.paths))

    # -- app-wide actions -------------------------------------------------------------------------
    def action_quit_app(self) -> None:
        self.exit(0)

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        notes = screen.help_lines() if isinstance(screen, AdvisorScreen) else []
        title = TITLES.get(type(screen), "advisor")
        self.push_screen(HelpScreen(title, self._bindings_of(screen), notes))

    def action_export(self) -> None:
        if isinstance(self.screen, AdvisorScreen):
            self.screen.export()

    def action_plots(self) -> None:
        if isinstance(self.screen, AdvisorScreen):
            self.screen.plots()

    def _bindings_of(self, screen: Screen[object]) -> list[Binding]:
        own = [b for b in screen.BINDINGS if isinstance(b, Binding)]
        app = [b for b in self.BINDINGS if isinstance(b, Binding)]
        palette = Binding("ctrl+p", "command_palette", "Command palette: every action by name")
        return [*own, *app, palette]

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """One palette entry per action of the current screen and of the app."""
        for binding in self._bindings_of(screen):
            if binding.action == "command_palette":
                continue
            target = screen if binding in screen.BINDINGS else self
            yield SystemCommand(
                binding.description,
                f"key: {key_label(binding.key)}",
                partial(target.run_action, binding.action),
            )
        yield SystemCommand("Keys and help", "what each key does on this screen", self.action_help)


def make_app(
    target: str | None = None,
    *,
    runs_dir: str | os.PathLike[str] | None = None,
    export_dir: str | os.PathLike[str] | None = None,
    config: Config | str | None = "auto",
    poll_s: float = 0.5,
) -> AdvisorApp:
    """The app on a store (``target`` None or a runs directory), a run or a sweep.

    ``config``: ``"auto"`` reads ``[tool.advisor]`` from the nearest pyproject.toml (as
    ``advisor check`` does), None uses the defaults, or a path to a pyproject.toml.
    """
    from advisor.diagnosis.config import Config as ConfigType
    from advisor.diagnosis.config import load_config

    found = resolve(target, runs_dir)
    if isinstance(config, ConfigType) or config is None:
        settings = config
    else:
        settings = load_config(None if config == "auto" else config)
    return AdvisorApp(
        TuiData(found.runs_dir, config=settings, export_dir=export_dir), found, poll_s=poll_s
    )
