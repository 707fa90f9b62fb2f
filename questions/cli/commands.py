"""Every subcommand of `manage.py questions`, in the order `--help` and docs/cli.md list them:
the command groups, each a module that declares its subcommands' parsers, every parser with its
handler (`set_defaults(handler=…)`, run by `base.execute`)."""

from __future__ import annotations

import argparse

from questions.cli import (
    agreement,
    application,
    attribution,
    authoring,
    controls,
    dev,
    disputes,
    fetches,
    ingest,
    labels,
    production,
    proofs,
    records,
    review,
    runs,
    scorecard,
    suggestions,
    teams,
)

GROUPS = (
    authoring,
    review,
    runs,
    controls,
    attribution,
    records,
    application,
    fetches,
    scorecard,
    labels,
    disputes,
    agreement,
    proofs,
    suggestions,
    ingest,
    teams,
    production,
    dev,
)


def add_subcommands(parser: argparse.ArgumentParser) -> None:
    """Every group's subcommands, under `parser` (the management command's, or the reference's)."""
    sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
