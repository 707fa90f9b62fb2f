"""The command line: a module per command group; the management command dispatches."""
