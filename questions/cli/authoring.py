"""`questions validate`, `import`, `states-import`, `lint-accept` and `submit`: the subcommands of
the console's command line that check a document against the contract (`spec.validate`), make a
draft of it, add sample states to a set, accept a lint finding with a reason, and send a draft
for review."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings

from questions import services
from questions.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    Console,
    Unusable,
    acting_user,
    add_json,
    add_set,
    add_version,
    no_version,
    read_json_file,
    read_json_lines,
)
from questions.core import check, spec
from questions.models import QuestionSet, Version
from questions.selectors import lints as lint_reads

#: what `validate --json` holds besides `status` and `detail` when the file cannot be used
NOT_VALIDATED = {"valid": False, "errors": [], "warnings": [], "accepted": [], "sha256": None}


def add_parsers(sub: Any) -> None:
    """The `validate`, `import`, `states-import`, `lint-accept` and `submit` subcommands."""
    validate = sub.add_parser(
        "validate",
        help="check a document against the question-set contract",
        description="Check FILE (a questions map, a POST /api/decisions body, a provider "
        "request body or an export document; - reads standard input).",
        epilog="Every error and warning is printed on its own line with its path, the "
        "question, the "
        "rule and the limit. With --set and --version, the findings accepted on that version "
        "(or one it was drawn from) are left out of the warnings and printed as accepted, "
        "each with its reason (an export document names its set and version as question_set "
        "and version). --json prints {valid, errors, warnings, accepted, sha256} (each issue "
        "with path, loc (the path as a list of keys), code, message, question, limit, "
        "actual; each accepted one also with reason, accepted_by and accepted_on, the version "
        "it was accepted on; sha256 is the canonical questions hash, null when invalid), plus "
        "status and detail when invalid or, with --strict, when a warning is open. Exit 0 "
        "valid (warnings allowed; with --strict only when none is open), 1 invalid (or, with "
        "--strict, a warning open; or no such version), 2 the file is unreadable or not JSON.",
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
    validate.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any warning is left open (accepted findings aside): the lints a CI "
        "gates on",
    )
    add_set(validate, required=False)
    add_version(validate)
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
    imp.add_argument("--team", metavar="T", help="a new set's team (default: the default team)")
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

    accept = sub.add_parser(
        "lint-accept",
        help="accept a lint finding of a version with a reason",
        description="Accept the open CODE warning on question Q of version N of SLUG (as "
        "saved) for REASON: it stops showing for that question — in the editor, on the review "
        "page, in validate --set/--version and in the gate's --strict-lints — on that version "
        "and every version drawn from it, while its words stay the same. The reason is kept "
        "in the version's record and shown on the review page.",
        epilog="Only an author of the set accepts (its owner, or one who created or edited "
        "one of its versions; --user defaults to the first superuser); a reason is required, "
        "at most 500 characters. When the question has several CODE warnings, --path names "
        "the one (the refusal lists their paths). Exit 0 accepted, 1 refused (no such open "
        "finding, accepted already, no reason, not an author; with --json {status, detail}), "
        "2 unusable arguments.",
    )
    add_set(accept)
    add_version(accept, required=True)
    accept.add_argument("--question", required=True, metavar="Q")
    accept.add_argument("--code", required=True, metavar="CODE")
    accept.add_argument(
        "--path", metavar="PATH", help="the finding's path, e.g. questions.q.instructions"
    )
    accept.add_argument("--reason", required=True, metavar="REASON")
    accept.add_argument("--user", help="the author (default: the first superuser)")
    add_json(accept)
    accept.set_defaults(handler=do_lint_accept)

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
    cli: Console,
    *,
    file: str,
    json: bool = False,
    state_file: list[str] | None = None,
    strict: bool = False,
    slug: str | None = None,
    number: int | None = None,
    **_: Any,
) -> int:
    if (slug is None) != (number is None):
        raise Unusable("--set and --version name the version whose accepted findings count")
    value = read_json_file(file)
    states = [read_json_file(name) for name in state_file or ()]
    version = None
    if slug is not None:
        version = Version.objects.of(slug, number).select_related("question_set").first()
        if version is None:
            return cli.fail(no_version(slug, number, None), as_json=json, status=404)
    result = check.validate(value, limits=settings.DECISIONS_LIMITS, sample_states=states or None)
    found = lint_reads.version_lints(version, result.warnings, None if version else [])
    reasons = _reasons(found)
    still_open = found.open if version else result.warnings
    refused = not result.valid or (strict and bool(still_open))
    if json:
        out = result.as_dict()
        out["warnings"] = [w.as_dict() for w in still_open]
        out["accepted"] = [{**w.as_dict(), **reasons[check.finding_key(w)]} for w in found.accepted]
        if refused:
            out["status"] = 422
            out["detail"] = _summary(result, still_open, found.accepted, strict=strict)
        cli.emit_json(out)
    else:
        for issue in result.errors:
            cli.stdout.write(f"error: {issue}")
        for issue in still_open:
            cli.stdout.write(f"warning: {issue}")
        for issue in found.accepted:
            why = reasons[check.finding_key(issue)]
            cli.stdout.write(
                f"accepted: {issue} — by {why['accepted_by']} on v{why['accepted_on']}: "
                f"{why['reason']}"
            )
        cli.stdout.write(_summary(result, still_open, found.accepted, strict=strict))
    return EXIT_FAILED if refused else EXIT_OK


def _reasons(found: lint_reads.Lints) -> dict[check.FindingKey, dict[str, Any]]:
    """Why each accepted finding was accepted: its reason, who accepted it and on which
    version (the latest acceptance of it, should there be more)."""
    return {
        (a.path, a.code, a.words): {
            "reason": a.reason,
            "accepted_by": a.actor.get_username() if a.actor else "the operator",
            "accepted_on": a.version.number,
        }
        for a in found.acceptances
    }


def _summary(
    result: spec.Validation,
    still_open: list[spec.Issue] | None = None,
    accepted: Sequence[spec.Issue] = (),
    *,
    strict: bool = False,
) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    still_open = result.warnings if still_open is None else still_open
    warnings = count(len(still_open), "warning")
    if accepted:
        warnings += f" ({len(accepted)} more accepted)"
    if result.document is None:
        first = result.errors[0]
        return f"invalid: {count(len(result.errors), 'error')}, {warnings}; first: {first}"
    n = len(result.document.questions)
    line = f"{result.form} document, {count(n, 'question')}, {warnings}; sha256 {result.sha256}"
    if strict and still_open:
        return f"strict: {line}; --strict allows no open warning, first: {still_open[0]}"
    return f"valid: {line}"


def do_import(
    cli: Console,
    *,
    file: str,
    slug: str,
    user: str | None,
    json: bool,
    team: str | None = None,
    **_: Any,
) -> int:
    value = read_json_file(file)
    author = acting_user(user)
    into = services.team_named(team, user=author) if team else None
    try:
        version = services.version_import(slug=slug, value=value, author=author, team=into)
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


def do_lint_accept(
    cli: Console,
    *,
    slug: str,
    number: int,
    question: str,
    code: str,
    path: str | None,
    reason: str,
    user: str | None,
    json: bool,
    **_: Any,
) -> int:
    version = Version.objects.of(slug, number).select_related("question_set").first()
    if version is None:
        return cli.fail(no_version(slug, number, None), as_json=json, status=404)
    accepted = services.lint_accept(
        version=version,
        question=question,
        code=code,
        path=path,
        reason=reason,
        actor=acting_user(user),
    )
    if json:
        cli.emit_json(
            {
                "set": slug,
                "version": number,
                "question": accepted.question,
                "path": accepted.path,
                "code": accepted.code,
                "words": accepted.words,
                "reason": accepted.reason,
            }
        )
    else:
        cli.stdout.write(
            f"{slug} v{number}: accepted {accepted.code} at {accepted.path}: {accepted.reason}"
        )
    return EXIT_OK
