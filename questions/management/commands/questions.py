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
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from questions import demo, services, spec
from questions.models import QuestionSet, Version

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


def read_json_lines(name: str) -> list[Any]:
    """A JSON array, or JSON Lines (one value per non-blank line)."""
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise Unusable(f"cannot read {name}: {exc.strerror or exc}") from exc
    try:
        value = spec.loads(raw)
    except spec.JSONTextError:
        items = []
        for number, line in enumerate(raw.splitlines(), 1):
            if line.strip():
                try:
                    items.append(spec.loads(line))
                except spec.JSONTextError as exc:
                    raise Unusable(f"{name} line {number} is not JSON: {exc}") from exc
        return items
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]  # JSON Lines with a single line
    raise Unusable(f"{name} must hold a JSON array or JSON Lines of objects")


def _user(username: str | None):
    users = get_user_model().objects
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise Unusable(f"There is no user {username}.")
        return user
    user = users.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise Unusable("Name the author with --user (there is no superuser to default to).")
    return user


def _file_into_set(parser) -> None:
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--set", required=True, dest="slug", metavar="SLUG")
    parser.add_argument("--user", help="the author (default: the first superuser)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


class Command(BaseCommand):
    help = "Validate, import and manage question sets. See DESIGN.md §6."

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

        imp = sub.add_parser(
            "import",
            help="a new draft version from a document",
            description="Make a new draft of SLUG from FILE (a questions map, a request body or "
            "an export document); the set is created if new. Invalid input changes nothing.",
        )
        _file_into_set(imp)

        states = sub.add_parser(
            "states-import",
            help="add sample states from a JSON array or JSONL",
            description='Add the sample states in FILE, each {"name", "state", "expected"?, '
            '"tags"?}, to SLUG: all or nothing.',
        )
        _file_into_set(states)

        submit = sub.add_parser("submit", help="submit a draft for review (it freezes)")
        submit.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        submit.add_argument("--version", required=True, type=int, dest="number", metavar="N")
        submit.add_argument("--user", required=True)
        submit.add_argument("--json", action="store_true")

        demo_ = sub.add_parser(
            "demo",
            help="demo users author/reviewer (password demo) and demo sets",
            description="Create the demo users and sets that are missing. Refused unless "
            "DJANGO_DEBUG is on or --force is given.",
        )
        demo_.add_argument("--force", action="store_true")

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

    def fail(self, detail: str, *, as_json: bool, status: int = 422) -> int:
        if as_json:
            self.emit_json({"status": status, "detail": detail})
        else:
            self.stderr.write(detail)
        return EXIT_FAILED

    # import, states-import, submit, demo ---------------------------------------------------

    def do_import(self, *, file: str, slug: str, user: str | None, json: bool, **_: Any) -> int:
        value = read_json_file(file)
        author = _user(user)
        try:
            version = services.version_import(slug=slug, value=value, author=author)
        except services.InvalidContent as exc:
            if json:
                self.emit_json(
                    {"status": 422, "detail": str(exc), "errors": [e.as_dict() for e in exc.errors]}
                )
            else:
                for issue in exc.errors:
                    self.stdout.write(f"error: {issue}")
                self.stderr.write("invalid: nothing was imported")
            return EXIT_FAILED
        except services.ServiceError as exc:
            return self.fail(str(exc), as_json=json, status=409)
        out = {
            "set": version.question_set.slug,
            "version": version.number,
            "status": version.status,
            "sha256": version.sha256,
        }
        if json:
            self.emit_json(out)
        else:
            self.stdout.write(
                f"{out['set']} version {out['version']} (draft), sha256 {out['sha256']}"
            )
        return EXIT_OK

    def do_states_import(
        self, *, file: str, slug: str, user: str | None, json: bool, **_: Any
    ) -> int:
        items = read_json_lines(file)
        author = _user(user)
        question_set = QuestionSet.objects.filter(slug=slug).first()
        if question_set is None:
            return self.fail(f"There is no set {slug}.", as_json=json, status=404)
        try:
            created = services.sample_states_import(
                question_set=question_set, items=items, author=author
            )
        except services.ServiceError as exc:
            return self.fail(f"{exc}; nothing was imported", as_json=json)
        if json:
            self.emit_json({"set": slug, "imported": [s.name for s in created]})
        else:
            self.stdout.write(f"{slug}: {len(created)} sample states imported")
        return EXIT_OK

    def do_submit(self, *, slug: str, number: int, user: str, json: bool, **_: Any) -> int:
        version = Version.objects.filter(question_set__slug=slug, number=number).first()
        if version is None:
            return self.fail(f"{slug} has no version {number}.", as_json=json, status=404)
        try:
            version = services.version_submit(version=version, author=_user(user))
        except services.ServiceError as exc:
            return self.fail(str(exc), as_json=json, status=409)
        if json:
            self.emit_json({"set": slug, "version": number, "status": version.status})
        else:
            self.stdout.write(f"{slug} version {number} submitted for review")
        return EXIT_OK

    def do_demo(self, *, force: bool, **_: Any) -> int:
        if not (settings.DEBUG or force):
            self.stderr.write(
                "Refused: the demo users have the password `demo`. Run it with "
                "DJANGO_DEBUG=1, or add --force if you mean it."
            )
            return EXIT_FAILED
        done = demo.demo_load()
        for line in done:
            self.stdout.write(f"created {line}")
        if not done:
            self.stdout.write("the demo is loaded already")
        self.stdout.write(f"sign in as author or reviewer, password {demo.PASSWORD}")
        return EXIT_OK

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
