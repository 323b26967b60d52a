"""The screens: Runs, Findings, Scaling, Live, Compare, Help. They never import each other:
they post :class:`~advisor.tui.messages.Navigate` and the app opens the next one."""
