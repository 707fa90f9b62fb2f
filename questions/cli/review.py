"""`questions approve`, `export`, `token`, `label`, `request-changes` and `diff`: the subcommands
of the console's command line that review a submitted version (approve it or send it back, with
the review page's rules: `services.reviews`), point labels at approved versions, write the export
document the runtime fetches and its API tokens, and show what changed between two versions."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from questions import exports, roles, services
from questions.cli.base import (
    EXIT_OK,
    Console,
    Unusable,
    acting_user,
    add_json,
    add_label,
    add_set,
    add_version,
    add_version_or_label,
)
from questions.core import diff
from questions.models import APIToken, Label, QuestionSet, Version
from questions.services import tokens as token_services


def add_parsers(sub: Any) -> None:
    """The `approve`, `export`, `token`, `label`, `request-changes` and `diff` subcommands."""
    approve = sub.add_parser(
        "approve",
        help="approve a submitted version (never your own), optionally labelling it",
        epilog="Holds to the review page's rules: a version with no finished batch run, or "
        "whose latest run passes fewer of the question–state pairs it and the baseline's "
        "latest run both checked (or shares none with it), is refused (exit 1; --json gives "
        "{status: 422, detail}, the detail naming the flag) unless --confirm-weak-evidence "
        "is given (the page's Approve anyway); the approval's note then opens with "
        "'Approved although this version ... (confirmed).'. Prints the model and "
        "answered_by it pinned.",
    )
    add_set(approve)
    add_version(approve, required=True)
    approve.add_argument("--user", required=True)
    add_label(approve, default="")
    approve.add_argument("--note", default="")
    approve.add_argument(
        "--confirm-weak-evidence",
        action="store_true",
        help="approve a version whose evidence is weak (no finished batch run, or fewer "
        "passes than the baseline's on the question–state pairs both runs checked), as the "
        "review page's “Approve anyway”; recorded in the note",
    )
    add_json(approve)
    approve.set_defaults(handler=do_approve)

    export = sub.add_parser("export", help="write an approved version's export document")
    add_set(export)
    add_version_or_label(export, required=True)
    export.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
    add_json(export, "on failure, print JSON")
    export.set_defaults(handler=do_export)

    token = sub.add_parser(
        "token",
        help="create an API token for the application (printed once, alone on stdout), or "
        "revoke the tokens of a name",
        description="A token belongs to a team (--team; default: the default team) and "
        "reaches that team's sets only. A read token (the default) fetches exports: of the "
        "team's sets named with --set, or of every set of the team when none is named. An "
        "ingest token posts production states (POST /api/sets/SLUG/states), to the sets named "
        "with --set only (one at least), and fetches nothing. --expires 90d makes it stop "
        "working 90 days from now.",
        epilog="--revoke NAME revokes every active token of that name (of --team, when given) "
        "and prints their prefixes (exit 1 when there is none). --list prints the tokens of "
        "--team (or of every team): scope, sets, when made, last used and when they expire.",
    )
    token_action = token.add_mutually_exclusive_group(required=True)
    token_action.add_argument("--name", help="a new token for NAME")
    token_action.add_argument(
        "--revoke", metavar="NAME", help="revoke every active token named NAME"
    )
    token_action.add_argument("--list", action="store_true", dest="listing", help="list the tokens")
    token.add_argument("--team", metavar="T", help="the token's team (default: the default team)")
    token.add_argument(
        "--expires",
        metavar="DAYS",
        help="how long it works: Nd days (e.g. 90d); default: until revoked",
    )
    token.add_argument(
        "--by", metavar="A", help="the team admin who makes or revokes it (default: the operator)"
    )
    token.add_argument(
        "--scope",
        choices=token_services.SCOPES,
        default=token_services.READ,
        help="read fetches exports; ingest posts production states",
    )
    token.add_argument(
        "--set",
        action="append",
        default=[],
        dest="sets",
        metavar="SLUG",
        help="a set the token is for (again for more); an ingest token names one at least",
    )
    add_json(token, "print JSON (a new token: with its prefix, team and expiry)")
    token.set_defaults(handler=do_token)

    label = sub.add_parser(
        "label",
        help="point a label at an approved version (move it, or roll it back)",
        description="Point label L of SLUG at approved version N; every move is logged, "
        "and a rollback is a move back.",
        epilog="A reviewer's move, logged with the note; a draft or in-review version is "
        "refused with 409.",
    )
    add_set(label)
    add_label(label, required=True)
    add_version(label, required=True)
    label.add_argument("--user", required=True, help="the reviewer who moves it")
    label.add_argument("--note", default="", metavar="T")
    add_json(label)
    label.set_defaults(handler=do_label)

    changes = sub.add_parser(
        "request-changes",
        help="send a submitted version back to its author with a note",
    )
    add_set(changes)
    add_version(changes, required=True)
    changes.add_argument("--user", required=True, help="the reviewer")
    changes.add_argument("--note", required=True, metavar="T", help="what should change")
    add_json(changes)
    changes.set_defaults(handler=do_request_changes)

    diff_ = sub.add_parser(
        "diff",
        help="what changed in the words between two versions",
        description="The semantic diff of version N and version M of SLUG, per question "
        "and field: added, removed, retyped, changed, renamed options, reordered levels.",
        epilog="Each changed field's words before (-) and after (+). --json gives {set, from, "
        "to, summary, reordered, questions: [{id, status, type_before, type_after, changes: "
        "[{label, kind, before, after, note?}]}]}.",
    )
    add_set(diff_)
    diff_.add_argument("--from", required=True, type=int, dest="from_number", metavar="N")
    diff_.add_argument("--to", required=True, type=int, dest="to_number", metavar="M")
    add_json(diff_)
    diff_.set_defaults(handler=do_diff)


def do_approve(
    cli: Console,
    *,
    slug: str,
    number: int,
    user: str,
    label: str,
    note: str,
    confirm_weak_evidence: bool,
    json: bool,
    **_: Any,
) -> int:
    version = Version.objects.of(slug, number).first()
    if version is None:
        return cli.fail(f"{slug} has no version {number}.", as_json=json, status=404)
    try:
        version = services.version_approve(
            version=version,
            reviewer=acting_user(user),
            note=note,
            label=label,
            confirm_weak_evidence=confirm_weak_evidence,
        )
    except services.WeakEvidence as exc:
        return cli.fail(
            f"{slug} version {number} {exc.reason}: give --confirm-weak-evidence to approve "
            "it anyway, and say why with --note.",
            as_json=json,
            status=exc.status,
        )
    out = {
        "set": slug,
        "version": number,
        "status": version.status,
        "label": label or None,
        "model": version.approved_model,
        "answered_by": version.approved_model_answered,
    }
    if json:
        cli.emit_json(out)
    else:
        answered = version.approved_model_answered
        shown = ", ".join(answered) if isinstance(answered, list) else answered
        cli.stdout.write(
            f"{slug} version {number} approved"
            + (f"; {label} points at it" if label else "")
            + f"; model {version.approved_model}, "
            + (f"answered by {shown}" if shown else "no answering model recorded")
        )
    return EXIT_OK


def do_export(
    cli: Console,
    *,
    slug: str,
    number: int | None,
    label: str | None,
    output: str | None,
    json: bool,
    **_: Any,
) -> int:
    version = exports.exportable_version(slug, label=label, number=number)
    if version is None:
        which = f"label {label!r}" if label is not None else f"version {number}"
        return cli.fail(f"{slug} has no approved {which}.", as_json=json, status=404)
    text = exports.export_text(exports.export_document(version))
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise Unusable(f"cannot write {output}: {exc.strerror or exc}") from exc
        cli.stderr.write(f"wrote {output} ({slug} v{version.number}, sha256 {version.sha256})")
    else:
        cli.stdout.write(text, ending="")
    return EXIT_OK


def do_token(
    cli: Console,
    *,
    name: str | None,
    revoke: str | None,
    json: bool,
    scope: str = token_services.READ,
    sets: list[str] | None = None,
    team: str | None = None,
    expires: str | None = None,
    by: str | None = None,
    listing: bool = False,
    **_: Any,
) -> int:
    actor = acting_user(by) if by else roles.OPERATOR
    into = services.team_named(team, user=actor) if team else None
    if listing:
        return _token_list(cli, into, actor, json)
    if revoke is not None:
        return _token_revoke(cli, revoke, into, actor, json)
    lasting = _days(expires) if expires else None
    try:
        token, raw = services.api_token_create(
            name=name, user=actor, scope=scope, sets=sets or [], team=into, expires_in=lasting
        )
    except services.ServiceError as exc:
        raise Unusable(str(exc)) from exc
    if json:
        cli.emit_json({**_token_json(token), "token": raw})
    else:
        cli.stdout.write(raw)
    return EXIT_OK


def _days(text: str) -> timedelta:
    """`90d` as 90 days; `Unusable` for anything else."""
    found = re.fullmatch(r"([0-9]{1,5})d", text.strip())
    if found is None:
        raise Unusable(f"--expires takes a number of days such as 90d, not {text[:20]!r}")
    return timedelta(days=int(found.group(1)))


def _token_json(token: APIToken) -> dict[str, Any]:
    def when(moment: Any) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "name": token.name,
        "prefix": f"{token.prefix}…",
        "team": token.team.slug,
        "scope": token.scope,
        "sets": sorted(qs.slug for qs in token.question_sets.all()),
        "created_at": when(token.created_at),
        "last_used_at": when(token.last_used_at),
        "expires_at": when(token.expires_at),
        "revoked_at": when(token.revoked_at),
        "active": token.active,
    }


def _token_list(cli: Console, team: Any, actor: Any, as_json: bool) -> int:
    tokens = APIToken.objects.select_related("team").prefetch_related("question_sets")
    if team is not None:
        tokens = tokens.filter(team=team)
    rows = [_token_json(t) for t in tokens if roles.may_manage_tokens(actor, t)]
    if as_json:
        cli.emit_json(rows)
        return EXIT_OK
    for r in rows:
        state = "active" if r["active"] else ("revoked" if r["revoked_at"] else "expired")
        cli.stdout.write(
            f"{r['team']}/{r['name']} {r['prefix']} {r['scope']} sets: "
            f"{', '.join(r['sets']) or 'every set of the team'}; last used "
            f"{r['last_used_at'] or 'never'}; expires {r['expires_at'] or 'never'}; {state}"
        )
    return EXIT_OK


def _token_revoke(cli: Console, name: str, team: Any, actor: Any, as_json: bool) -> int:
    tokens = APIToken.objects.filter(name=name.strip(), revoked_at__isnull=True)
    if team is not None:
        tokens = tokens.filter(team=team)
    tokens = [t for t in tokens if roles.may_read(actor, t)]
    if not tokens:
        return cli.fail(f"There is no active token named {name!r}.", as_json=as_json, status=404)
    for token in tokens:
        services.api_token_revoke(token=token, user=actor)
    prefixes = [f"{t.prefix}…" for t in tokens]
    if as_json:
        cli.emit_json({"revoked": len(tokens), "name": name, "prefixes": prefixes})
    else:
        cli.stdout.write(f"revoked {len(tokens)} token(s) named {name}: {', '.join(prefixes)}")
    return EXIT_OK


def _version(cli: Console, slug: str, number: int, as_json: bool) -> Version | int:
    """Version `number` of set `slug`, or the exit status of saying there is none."""
    version = Version.objects.of(slug, number).select_related("question_set").first()
    if version is not None:
        return version
    if not QuestionSet.objects.filter(slug=slug).exists():
        return cli.fail(f"There is no set {slug}.", as_json=as_json, status=404)
    return cli.fail(f"{slug} has no version {number}.", as_json=as_json, status=404)


def do_label(
    cli: Console,
    *,
    slug: str,
    label: str,
    number: int,
    user: str,
    note: str,
    json: bool,
    **_: Any,
) -> int:
    version = _version(cli, slug, number, json)
    if isinstance(version, int):
        return version
    actor = acting_user(user)
    before = Label.objects.filter(question_set=version.question_set, name=label).first()
    was = before.version.number if before else None
    services.label_move(
        question_set=version.question_set, name=label, version=version, actor=actor, note=note
    )
    if json:
        cli.emit_json({"set": slug, "label": label, "version": number, "previous": was})
    elif was == number:
        cli.stdout.write(f"{slug}: {label} already points at version {number}")
    else:
        moved = f" (was version {was})" if was is not None else " (new label)"
        cli.stdout.write(f"{slug}: {label} → version {number}{moved}")
    return EXIT_OK


def do_request_changes(
    cli: Console, *, slug: str, number: int, user: str, note: str, json: bool, **_: Any
) -> int:
    version = _version(cli, slug, number, json)
    if isinstance(version, int):
        return version
    version = services.version_request_changes(
        version=version, reviewer=acting_user(user), note=note
    )
    if json:
        cli.emit_json({"set": slug, "version": number, "status": version.status})
    else:
        cli.stdout.write(f"{slug} version {number}: changes requested")
    return EXIT_OK


def do_diff(
    cli: Console, *, slug: str, from_number: int, to_number: int, json: bool, **_: Any
) -> int:
    before = _version(cli, slug, from_number, json)
    if isinstance(before, int):
        return before
    after = _version(cli, slug, to_number, json)
    if isinstance(after, int):
        return after
    result = diff.document_diff(before.document, after.document)
    if json:
        cli.emit_json({"set": slug, "from": from_number, "to": to_number, **diff.as_json(result)})
        return EXIT_OK
    counts = ", ".join(f"{n} {status}" for status, n in result.summary.items())
    cli.stdout.write(f"{slug} v{from_number} → v{to_number}: {counts}")
    if result.reordered:
        cli.stdout.write("  the questions are in another order")
    marks = {"added": "+", "removed": "-", "retyped": "!", "changed": "~"}
    for q in result.changed:
        cli.stdout.write(f"{marks[q.status]} {q.id} ({q.type}): {q.status}")
        for change in q.changes:
            cli.stdout.write(
                f"    {change.label}: {change.kind}" + (f" — {change.note}" if change.note else "")
            )
            old, new = diff.sides(change.segments)
            if old != new:
                cli.stdout.write(f"      - {old}")
                cli.stdout.write(f"      + {new}")
    return EXIT_OK
