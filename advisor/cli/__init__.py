"""The ``advisor`` command. Subcommands live in one module each and import heavy things lazily."""
