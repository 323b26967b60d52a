"""The terminal interface (``advisor tui``): Textual screens over the application layer.

``advisor.tui.app.make_app(target, runs_dir=...)`` builds the app; it reads runs only through
:mod:`advisor.service` (``tui/data.py``). Importing this package loads no textual: the screens
and widgets do, when the app is made.
"""
