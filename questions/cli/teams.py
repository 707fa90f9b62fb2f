"""`questions team`, `questions member` and `questions audit`: the teams of the console — list
them, create one, move a set from one team to another —, a team's members and their roles, and
a team's audit log."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from questions import roles, services
from questions.cli.base import EXIT_OK, Console, Unusable, acting_user, add_json
from questions.core import audit_files
from questions.models import QuestionSet
from questions.selectors import audit, teams
from questions.services import budget
from questions.services.audit import ACTIONS


def add_parsers(sub: Any) -> None:
    """The `team` and `member` subcommands."""
    team = sub.add_parser(
        "team",
        help="list the teams, create one, or move a set to another team",
        description="Without an action, list the teams with their members and sets. --create "
        "T makes a team (the operator's or a superuser's step); --move-set S --to T moves set "
        "S, with everything of it, to team T (an admin of both teams: --user, by default the "
        "first superuser). A token of the old team reaches the moved set no more.",
    )
    action = team.add_mutually_exclusive_group()
    action.add_argument("--create", metavar="T", help="a new team with slug T")
    action.add_argument("--move-set", metavar="S", help="the set to move (with --to)")
    team.add_argument("--name", help="the new team's name (default: its slug)")
    team.add_argument("--to", metavar="T", help="the team --move-set moves the set to")
    team.add_argument("--user", metavar="U", help="who moves the set (an admin of both teams)")
    add_json(team, "print JSON")
    team.set_defaults(handler=do_team)

    member = sub.add_parser(
        "member",
        help="give a user a role in a team, or take them out of it",
        description="Give user U the role R in team T (viewer, author, reviewer or admin; a "
        "new member or a new role), or with --remove take them out. A team keeps one admin "
        "at least. --by names the team admin who does it (default: the operator).",
    )
    member.add_argument("--team", required=True, metavar="T")
    member.add_argument("--user", required=True, metavar="U", help="the member")
    member.add_argument("--role", choices=roles.ROLES, metavar="R", help="|".join(roles.ROLES))
    member.add_argument("--remove", action="store_true", help="take U out of T")
    member.add_argument("--by", metavar="A", help="the team admin who does it")
    add_json(member, "print JSON")
    member.set_defaults(handler=do_member)

    log = sub.add_parser(
        "audit",
        help="print a team's audit log",
        description="Print team T's audit log, newest first: every state-changing action on "
        "its sets, tokens, webhooks and members, and its members' sign-ins — when, who, what, "
        "the object, from which address. --since and --until take 7d, 24h, a day "
        "(2026-12-01, from its start in UTC) or an ISO date and time.",
    )
    log.add_argument("--team", required=True, metavar="T")
    log.add_argument("--since", metavar="WHEN")
    log.add_argument("--until", metavar="WHEN")
    log.add_argument("--actor", metavar="U", help="only what user U did")
    log.add_argument("--action", choices=ACTIONS, metavar="A", help="only action A")
    log.add_argument("--set", dest="slug", metavar="S", help="only what concerns set S")
    add_json(log, "print a JSON list")
    log.set_defaults(handler=do_audit)


def _team_json(team: Any) -> dict[str, Any]:
    return {
        "team": team.slug,
        "name": team.name,
        "members": [
            {"user": m.user.get_username(), "role": m.role} for m in teams.members_of(team)
        ],
        "sets": list(team.question_sets.order_by("slug").values_list("slug", flat=True)),
        "provider_calls_today": budget.team_spend(team).as_json(),
    }


def do_team(
    cli: Console,
    *,
    create: str | None,
    move_set: str | None,
    name: str | None,
    to: str | None,
    user: str | None,
    json: bool,
    **_: Any,
) -> int:
    if create is not None:
        made = services.team_create(slug=create, name=name or "", user=roles.OPERATOR)
        return _print(cli, _team_json(made), f"team {made.slug} ({made.name})", json)
    if move_set is not None:
        if not to:
            raise Unusable("--move-set needs --to T, the team to move the set to")
        return _move(cli, move_set, to, acting_user(user), json)
    found = [_team_json(t) for t in teams.visible_teams(roles.OPERATOR)]
    if json:
        cli.emit_json(found)
        return EXIT_OK
    for t in found:
        today = t["provider_calls_today"]
        left = (
            "" if today["left"] is None else f", {today['left']:,} left of {today['daily_limit']:,}"
        )
        cli.stdout.write(
            f"{t['team']}: {t['name']}, {len(t['members'])} member(s), sets: "
            f"{', '.join(t['sets']) or 'none'}; provider calls today: "
            f"{today['made'] + today['in_flight']:,}{left}"
        )
    return EXIT_OK


def _move(cli: Console, slug: str, to: str, actor: Any, as_json: bool) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).select_related("team").first()
    if question_set is None or not roles.may_read(actor, question_set):
        return cli.fail(f"There is no set {slug}.", as_json=as_json, status=404)
    before = question_set.team.slug
    target = services.team_named(to, user=actor)
    moved = services.set_move(question_set=question_set, to=target, user=actor)
    out = {"set": moved.slug, "from": before, "to": target.slug}
    return _print(cli, out, f"{moved.slug}: moved from {before} to {target.slug}", as_json)


def do_member(
    cli: Console,
    *,
    team: str,
    user: str,
    role: str | None,
    remove: bool,
    by: str | None,
    json: bool,
    **_: Any,
) -> int:
    actor = acting_user(by) if by else roles.OPERATOR
    found = services.team_named(team, user=actor)
    if remove:
        services.member_remove(team=found, username=user, user=actor)
        out = {"team": found.slug, "user": user, "role": None}
        return _print(cli, out, f"{user} is no member of {found.slug} now", json)
    if role is None:
        raise Unusable("member needs --role R (or --remove)")
    member = services.member_set(team=found, username=user, role=role, user=actor)
    out = {"team": found.slug, "user": user, "role": member.role}
    return _print(cli, out, f"{user} is {member.role} in {found.slug}", json)


def do_audit(
    cli: Console,
    *,
    team: str,
    since: str | None,
    until: str | None,
    actor: str | None,
    action: str | None,
    slug: str | None,
    json: bool,
    **_: Any,
) -> int:
    found = services.team_named(team, user=roles.OPERATOR)
    now = timezone.now()
    try:
        chosen = audit.AuditFilter(
            user=actor or "",
            action=action or "",
            set_slug=slug or "",
            since=audit_files.moment(since, now) if since else None,
            until=audit_files.moment(until, now) if until else None,
        )
    except ValueError as exc:
        raise Unusable(str(exc)) from None
    rows = list(audit.export_rows(found, chosen))
    if json:
        cli.emit_json(rows)
        return EXIT_OK
    for r in rows:
        where = f" from {r['address']}" if r["address"] else ""
        cli.stdout.write(
            f"{r['at']} {r['user']} {r['action']} {r['object']}"
            f"{' (' + r['set'] + ')' if r['set'] else ''} via {r['via']}{where}"
        )
    return EXIT_OK


def _print(cli: Console, value: Any, line: str, as_json: bool) -> int:
    if as_json:
        cli.emit_json(value)
    else:
        cli.stdout.write(line)
    return EXIT_OK
