"""The handlers of the ``srelib`` subcommands, one module per group; :mod:`srelib.cli` parses the
command line and calls them."""
