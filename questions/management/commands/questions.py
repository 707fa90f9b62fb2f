"""The console's command line: `python manage.py questions <subcommand>`. The subcommands live in
`questions.cli` (a module per group, `commands.GROUPS`); this command builds the parser from them
and hands the parsed options to the one chosen.

Exit status: 0 success, 1 invalid or failed (the reason printed; with --json a JSON object with
`detail` and the mapped `status`), 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from questions.cli import base, commands


class Command(BaseCommand):
    help = "Validate, import, run, review and export question sets."

    def add_arguments(self, parser: CommandParser) -> None:
        commands.add_subcommands(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        code = base.execute(base.Console(self.stdout, self.stderr), options)
        if code:
            sys.exit(code)
