"""`questions validate`, `import`, `states-import` and `submit`: the subcommands of the console's
command line that check a document against the contract (`spec.validate`), make a draft of it,
add sample states to a set, and send a draft for review."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions import services
from questions.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    Console,
    acting_user,
    add_json,
    add_set,
    add_version,
    read_json_file,
    read_json_lines,
)
from questions.core import check, spec
from questions.models import QuestionSet, Version

#: what `validate --json` holds besides `status` and `detail` when the file cannot be used
NOT_VALIDATED = {"valid": False, "errors": [], "warnings": [], "sha256": None}


def add_parsers(sub: Any) -> None:
    """The `validate`, `import`, `states-import` and `submit` subcommands."""
    validate = sub.add_parser(
        "validate",
        help="check a document against the question-set contract",
        description="Check FILE (a questions map, a POST /api/decisions body, a provider "
        "request body or an export document; - reads standard input).",
        epilog="Every error and warning is printed on its own line with its path, the "
        "question, the "
        "rule and the limit. --json prints {valid, errors, warnings, sha256} (each issue "
        "with path, loc (the path as a list of keys), code, message, question, limit, "
        "actual; sha256 is the canonical questions hash, null when invalid), plus status "
        "and detail when invalid. Exit 0 valid (warnings allowed), 1 invalid, 2 the file is "
        "unreadable or not JSON.",
    )
    validate.add_argument("file", metavar="FILE")
    add_json(validate, "print one JSON object")
    validate.add_argument(
        "--state-file",
        action="append",
        default=[],
        metavar="FILE",
        help="a sample state (any JSON) the backticked state paths are checked against; "
        "repeat for more (a body's own state is one already)",
    )
    validate.set_defaults(handler=do_validate, unusable=NOT_VALIDATED)

    imp = sub.add_parser(
        "import",
        help="a new draft version from a document",
        description="Make a new draft of SLUG from FILE (a questions map, a request body or "
        "an export document); the set is created if new. Invalid input changes nothing.",
        epilog="Refused while the set has an open draft; an invalid document changes nothing "
        "(its "
        "errors are printed as validate prints them). --user defaults to the first "
        "superuser.",
    )
    _file_into_set(imp)
    imp.set_defaults(handler=do_import)

    states = sub.add_parser(
        "states-import",
        help="add sample states from a JSON array or JSONL",
        description='Add the sample states in FILE, each {"name", "state", "expected"?, '
        '"tags"?}, to SLUG: all or nothing. A state whose content the set has already is '
        "skipped as a duplicate; one named as an existing state with the same content "
        "updates its expected answers (a new revision).",
    )
    _file_into_set(states)
    states.set_defaults(handler=do_states_import)

    submit = sub.add_parser("submit", help="submit a draft for review (it freezes)")
    add_set(submit)
    add_version(submit, required=True)
    submit.add_argument("--user", required=True)
    add_json(submit)
    submit.set_defaults(handler=do_submit)


def _file_into_set(parser: Any) -> None:
    parser.add_argument("file", metavar="FILE")
    add_set(parser)
    parser.add_argument("--user", help="the author (default: the first superuser)")
    add_json(parser, "print one JSON object")


def do_validate(
    cli: Console, *, file: str, json: bool = False, state_file: list[str] | None = None, **_: Any
) -> int:
    value = read_json_file(file)
    states = [read_json_file(name) for name in state_file or ()]
    result = check.validate(value, limits=settings.DECISIONS_LIMITS, sample_states=states or None)
    if json:
        out = result.as_dict()
        if not result.valid:
            out["status"] = 422
            out["detail"] = _summary(result)
        cli.emit_json(out)
    else:
        for issue in result.errors:
            cli.stdout.write(f"error: {issue}")
        for issue in result.warnings:
            cli.stdout.write(f"warning: {issue}")
        cli.stdout.write(_summary(result))
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


def do_import(cli: Console, *, file: str, slug: str, user: str | None, json: bool, **_: Any) -> int:
    value = read_json_file(file)
    author = acting_user(user)
    try:
        version = services.version_import(slug=slug, value=value, author=author)
    except services.InvalidContent as exc:
        if json:
            cli.emit_json(
                {"status": 422, "detail": str(exc), "errors": [e.as_dict() for e in exc.errors]}
            )
        else:
            for issue in exc.errors:
                cli.stdout.write(f"error: {issue}")
            cli.stderr.write("invalid: nothing was imported")
        return EXIT_FAILED
    out = {
        "set": version.question_set.slug,
        "version": version.number,
        "status": version.status,
        "sha256": version.sha256,
    }
    if json:
        cli.emit_json(out)
    else:
        cli.stdout.write(f"{out['set']} version {out['version']} (draft), sha256 {out['sha256']}")
    return EXIT_OK


def do_states_import(
    cli: Console, *, file: str, slug: str, user: str | None, json: bool, **_: Any
) -> int:
    # the service refuses more than a file may hold: read no further than one past it
    items = read_json_lines(file, most=settings.DECISIONS_UPLOAD_MAX_ROWS)
    author = acting_user(user)
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    try:
        report = services.sample_states_import(
            question_set=question_set, items=items, author=author
        )
    except services.ServiceError as exc:
        return cli.fail(f"{exc}; nothing was imported", as_json=json, status=exc.status)
    if json:
        cli.emit_json(
            {
                "set": slug,
                "imported": [s.name for s in report.added],
                "relabelled": [s.name for s in report.relabelled],
                "skipped": [{"name": n, "duplicate_of": d} for n, d in report.duplicates],
            }
        )
        return EXIT_OK
    line = f"{slug}: {len(report.added)} sample states imported"
    if report.relabelled:
        line += f", {len(report.relabelled)} with new expected answers"
    if report.duplicates:
        line += f", {len(report.duplicates)} skipped as duplicates by content"
    cli.stdout.write(line)
    return EXIT_OK


def do_submit(cli: Console, *, slug: str, number: int, user: str, json: bool, **_: Any) -> int:
    version = Version.objects.of(slug, number).first()
    if version is None:
        return cli.fail(f"{slug} has no version {number}.", as_json=json, status=404)
    version = services.version_submit(version=version, author=acting_user(user))
    if json:
        cli.emit_json({"set": slug, "version": number, "status": version.status})
    else:
        cli.stdout.write(f"{slug} version {number} submitted for review")
    return EXIT_OK
