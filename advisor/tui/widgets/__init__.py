"""Widgets the screens share: charts, the finding detail pane, the filter bar."""
