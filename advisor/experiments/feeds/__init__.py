"""Input feeds: every kind of input ``fit`` accepts, as cached, real, data-only and rewritten
feeds."""
