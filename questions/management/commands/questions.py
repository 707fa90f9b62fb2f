"""The console's command line (DESIGN.md §6): `python manage.py questions <subcommand>`.

Exit status: 0 success, 1 invalid or failed (the reason printed; with --json a JSON object with
`detail` and the mapped `status`), 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from questions import spec

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


class Unusable(Exception):
    """The arguments or the file cannot be used at all (exit 2)."""


def read_json_file(name: str) -> Any:
    """The JSON value in a file (`-` is standard input), or `Unusable` saying why not."""
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise Unusable(f"cannot read {name}: {exc.strerror or exc}") from exc
    try:
        return spec.loads(raw)
    except spec.JSONTextError as exc:
        raise Unusable(f"{name} is not JSON: {exc}") from exc


class Command(BaseCommand):
    help = "Validate, import, ask and export question sets. See DESIGN.md §6."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        validate = sub.add_parser(
            "validate",
            help="check a document against the question-set contract",
            description="Check FILE (a questions map, a POST /api/decisions body, a provider "
            "request body or an export document; - reads standard input).",
        )
        validate.add_argument("file", metavar="FILE")
        validate.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"do_{options['subcommand'].replace('-', '_')}")
        try:
            code = handler(**options)
        except Unusable as exc:
            if options.get("json"):
                out: dict[str, Any] = {"status": 400, "detail": str(exc)}
                if options["subcommand"] == "validate":
                    out = {"valid": False, "errors": [], "warnings": [], "sha256": None, **out}
                self.emit_json(out)
            else:
                self.stderr.write(str(exc))
            code = EXIT_UNUSABLE
        if code:
            sys.exit(code)

    def emit_json(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, ensure_ascii=False, indent=2))

    # validate --------------------------------------------------------------------------------

    def do_validate(self, *, file: str, json: bool = False, **_: Any) -> int:
        value = read_json_file(file)
        result = spec.validate(value, limits=settings.DECISIONS_LIMITS)
        if json:
            out = result.as_dict()
            if not result.valid:
                out["status"] = 422
                out["detail"] = _summary(result)
            self.emit_json(out)
        else:
            for issue in result.errors:
                self.stdout.write(f"error: {issue}")
            for issue in result.warnings:
                self.stdout.write(f"warning: {issue}")
            self.stdout.write(_summary(result))
        return EXIT_OK if result.valid else EXIT_FAILED


def _summary(result: spec.Validation) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    warnings = count(len(result.warnings), "warning")
    if result.document is None:
        first = result.errors[0]
        return f"invalid: {count(len(result.errors), 'error')}, {warnings}; first: {first}"
    n = len(result.document.questions)
    return (
        f"valid: {result.form} document, {count(n, 'question')}, {warnings}; sha256 {result.sha256}"
    )
