"""What every screen shares: the data door, running a read in a thread, one-line errors, and
the export / plots hooks the app's ``e`` and ``p`` keys call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from advisor.errors import AdvisorError
from advisor.tui.messages import LoadFailed

if TYPE_CHECKING:
    from advisor.tui.data import TuiData
    from advisor.tui.model import ExportResult


@runtime_checkable
class AdvisorHost(Protocol):
    """What a screen needs of the app it runs in (``AdvisorApp`` has it; screens never import
    the app, which imports them)."""

    data: TuiData
    poll_s: float
    last_input: float  # monotonic time of the last key or mouse event


class AdvisorScreen(Screen[None]):
    """A screen of the advisor app (navigation goes through the app, never screen to screen)."""

    BACK: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]

    @property
    def advisor(self) -> AdvisorHost:
        app = self.app
        if not isinstance(app, AdvisorHost):
            raise TypeError(
                f"{type(self).__name__} runs in the advisor app, not in {type(app).__name__}"
            )
        return app

    @property
    def data(self) -> TuiData:
        return self.advisor.data

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.notify("this is the first screen: q quits", timeout=3)

    def load(
        self,
        work: Callable[[], Message | None],
        what: str,
        *,
        group: str = "load",
        exclusive: bool = True,
    ) -> None:
        """Run ``work`` in a thread; post what it returns, or a :class:`LoadFailed` line."""

        def run() -> None:
            try:
                message = work()
            except AdvisorError as exc:
                self.post_message(LoadFailed(str(exc), what))
                return
            except Exception as exc:  # noqa: BLE001 - a line in the UI, never a traceback
                self.post_message(LoadFailed(f"internal error: {type(exc).__name__}: {exc}", what))
                return
            if message is not None:
                self.post_message(message)

        self.run_worker(run, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def export_result(self, work: Callable[[], ExportResult]) -> None:
        """Write an export in a thread and say where it went."""

        def run() -> None:
            try:
                result = work()
            except Exception as exc:  # noqa: BLE001 - AdvisorErrors and the unexpected: one line
                text = (
                    str(exc)
                    if isinstance(exc, AdvisorError)
                    else f"internal error: {type(exc).__name__}: {exc}"
                )
                self.app.call_from_thread(self.notify, text, severity="error", timeout=8)
                return
            self.app.call_from_thread(
                self.notify,
                result.message(),
                title="export",
                severity="warning" if not result.written else "information",
                timeout=10,
            )

        self.run_worker(run, thread=True, group="export", exit_on_error=False)

    # Hooks for the app-wide keys (overridden by the screens that have something to give).
    def export(self) -> None:
        self.notify("nothing to export on this screen", timeout=4)

    def plots(self) -> None:
        self.notify("no plots on this screen: open Scaling (w) or Live (l)", timeout=4)

    def text_plots(self) -> dict[str, str]:
        return {}

    def help_lines(self) -> list[tuple[str, str]]:
        """Extra lines for the help screen: (what, how)."""
        return []

    @staticmethod
    def describe(value: Any) -> str:
        return "—" if value is None else str(value)
