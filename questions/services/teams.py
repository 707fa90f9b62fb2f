"""Teams: the default team, a new team, its members and their roles, a set moved from one team to
another. The team's admins manage its members (`roles.may_manage_team`); the operator at the
server's command line creates teams."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from questions import roles
from questions.models import Membership, QuestionSet, Team
from questions.services.audit import audit_record
from questions.services.errors import (
    Conflict,
    Invalid,
    NotAllowed,
    NotFound,
    a_name,
    check_slug,
    require,
)

ADMINS_ONLY = "Only the team's admins manage its members."
MOVERS_ONLY = "Only an admin of both teams moves a set from one to the other."
CREATORS_ONLY = "Only the operator or a superuser creates a team."


def team_default() -> Team:
    """The team of a one-team install (migration 0034 made it; made again if it is gone)."""
    team, _ = Team.objects.get_or_create(slug=Team.DEFAULT, defaults={"name": "Default team"})
    return team


def team_named(slug: str, *, user: Any) -> Team:
    """The team `slug`, as `user` may see it: `NotFound` for a team they are no member of."""
    team = Team.objects.filter(slug=slug).first()
    if team is None or not roles.may_read(user, team):
        raise NotFound(f"There is no team {slug}.")
    return team


@transaction.atomic
def team_create(*, slug: str, name: str = "", user: Any) -> Team:
    """A new team, with no member yet (`member_set` adds them)."""
    if not (user is roles.OPERATOR or getattr(user, "is_superuser", False)):
        raise NotAllowed(CREATORS_ONLY)
    slug = check_slug(slug, "team")
    name = a_name((name or slug).strip(), "The team's name")
    if len(name) > Team._meta.get_field("name").max_length:
        raise Invalid(f"A team's name has {len(name)} characters; at most 200.")
    try:
        with transaction.atomic():
            team = Team.objects.create(slug=slug, name=name)
    except IntegrityError:
        raise Conflict(f"A team called {slug} exists already.") from None
    audit_record(action="team.created", actor=user, team=team, obj=team)
    return team


def _member_user(username: str) -> Any:
    found = get_user_model().objects.filter(username=username).first()
    if found is None:
        raise NotFound(f"There is no user {username}.")
    return found


@transaction.atomic
def member_set(*, team: Team, username: str, role: str, user: Any) -> Membership:
    """Give `username` the role `role` in `team` (a new member, or a new role)."""
    require(user, roles.may_manage_team, ADMINS_ONLY, on=team)
    if role not in roles.ROLES:
        raise Invalid(f"A role is {', '.join(roles.ROLES)}; not {str(role)[:20]!r}.", code="role")
    member = _member_user(username)
    found = Membership.objects.select_for_update().filter(team=team, user=member).first()
    if found is None:
        found = Membership.objects.create(team=team, user=member, role=role)
        _audited("member.added", user, team, member, {"role": role})
    elif found.role != role:
        _keep_an_admin(team, found, role)
        before, found.role = found.role, role
        found.save(update_fields=["role", "updated_at"])
        _audited("member.role_changed", user, team, member, {"from": before, "to": role})
    roles.forget(member)
    return found


def _audited(action: str, user: Any, team: Team, member: Any, detail: dict) -> None:
    audit_record(
        action=action,
        actor=user,
        team=team,
        obj=member,
        detail={"user": member.get_username(), **detail},
    )


@transaction.atomic
def member_remove(*, team: Team, username: str, user: Any) -> None:
    """Take `username` out of `team`."""
    require(user, roles.may_manage_team, ADMINS_ONLY, on=team)
    member = _member_user(username)
    found = Membership.objects.select_for_update().filter(team=team, user=member).first()
    if found is None:
        raise NotFound(f"{username} is no member of {team.slug}.")
    _keep_an_admin(team, found, None)
    found.delete()
    _audited("member.removed", user, team, member, {"role": found.role})
    roles.forget(member)


def _keep_an_admin(team: Team, changed: Membership, role: str | None) -> None:
    """Refuse to leave a team that had an admin with none (nobody could manage it then)."""
    if changed.role != roles.ADMIN or role == roles.ADMIN:
        return
    others = team.memberships.filter(role=roles.ADMIN).exclude(pk=changed.pk)
    if not others.exists():
        raise Conflict(
            f"{changed.user.get_username()} is the last admin of {team.slug}: make another "
            "member admin first."
        )


@transaction.atomic
def set_move(*, question_set: QuestionSet, to: Team, user: Any) -> QuestionSet:
    """Move a set (with everything of it) to another team. The API tokens of the old team that
    named it keep naming it (a read token that names sets does not become one that reads every
    set) but reach it no more: a token reaches only its own team's sets."""
    require(user, roles.may_manage_team, MOVERS_ONLY, on=question_set)
    require(user, roles.may_manage_team, MOVERS_ONLY, on=to)
    if question_set.team_id == to.pk:
        raise Conflict(f"{question_set.slug} belongs to {to.slug} already.")
    before = question_set.team
    question_set.team = to
    question_set.save(update_fields=["team", "updated_at"])
    detail = {"from": before.slug, "to": to.slug}
    for team in (before, to):  # each team's log says the set left or came
        audit_record(
            action="set.moved",
            actor=user,
            team=team,
            obj=question_set,
            question_set=question_set,
            detail=detail,
        )
    return question_set


#: who the log names for the roles single sign-on gives
IDENTITY_PROVIDER = "the identity provider"


@transaction.atomic
def member_sync(*, user: Any, wanted: dict[str, str], managed: set[str]) -> dict[str, str]:
    """The roles the identity provider's groups give `user` at a sign-in: in each team of
    `managed` (those its group mapping names; a team named there is made when missing), the role
    `wanted` names, or no membership when it names none. Other teams' memberships stay. A team's
    last admin keeps their role. Returns team → role as they are now in the managed teams."""
    now: dict[str, str] = {}
    for slug in sorted(managed):
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            team = Team.objects.create(slug=slug, name=slug)
            audit_record(action="team.created", actor=IDENTITY_PROVIDER, team=team, obj=team)
        found = Membership.objects.select_for_update().filter(team=team, user=user).first()
        role = wanted.get(slug)
        if role is not None and found is None:
            found = Membership.objects.create(team=team, user=user, role=role)
            _audited("member.added", IDENTITY_PROVIDER, team, user, {"role": role})
        elif role is not None and found.role != role:
            try:
                _keep_an_admin(team, found, role)
            except Conflict:
                role = found.role
            else:
                before, found.role = found.role, role
                found.save(update_fields=["role", "updated_at"])
                _audited(
                    "member.role_changed",
                    IDENTITY_PROVIDER,
                    team,
                    user,
                    {"from": before, "to": role},
                )
        elif role is None and found is not None:
            try:
                _keep_an_admin(team, found, None)
            except Conflict:
                role = found.role
            else:
                found.delete()
                _audited("member.removed", IDENTITY_PROVIDER, team, user, {"role": found.role})
        if role is not None:
            now[slug] = role
    roles.forget(user)
    return now
