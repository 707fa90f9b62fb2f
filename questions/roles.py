"""Who may do what, as named predicates. The services ask them before they change anything or
spend a provider call (`services.errors.require`); views ask them only to decide what to show.

A set belongs to a team, and a user acts on it through their one role in that team:

    viewer     reads the team's sets, replays recordings
    author     + writes sets, drafts and sample states, submits, asks live backends, comments
    reviewer   + approves, requests changes, moves labels, settles disputes, manages the team's
               API tokens and webhooks, asks live backends, comments (no writing: the four eyes)
    admin      every right of an author and a reviewer, and the team's members, sets moved to
               or from it, and its audit log

Someone who is no member of a team does not see its sets at all: a lookup of one answers 404,
not 403 (`may_read`). A superuser has every role in every team. `OPERATOR` is the person at
the server's command line (`manage.py questions …` without `--user`, the demo data): shell
access to the server is already every right there is.

Each predicate takes the user and `on`: the team, or what belongs to one (a set, a token), or
its id. `on=None` asks whether the user holds the right in any team (the navigation, a set-less
ask).
"""

from __future__ import annotations

from typing import Any

from questions.models import Membership, Team

VIEWER, AUTHOR, REVIEWER, ADMIN = (r.value for r in Membership.Role)
ROLES = (VIEWER, AUTHOR, REVIEWER, ADMIN)

#: the groups of the console before teams: migration 0034 made them roles of the default team
#: (both groups: admin), and the tests' factories still read them so
AUTHORS = "authors"
REVIEWERS = "reviewers"

WRITE, REVIEW, ASK, COMMENT, TOKENS, WEBHOOKS, MEMBERS = (
    "write",
    "review",
    "ask",
    "comment",
    "tokens",
    "webhooks",
    "members",
)

#: what each role may do beyond reading its team's sets
RIGHTS: dict[str, frozenset[str]] = {
    VIEWER: frozenset(),
    AUTHOR: frozenset({WRITE, ASK, COMMENT}),
    REVIEWER: frozenset({REVIEW, ASK, COMMENT, TOKENS, WEBHOOKS}),
    ADMIN: frozenset({WRITE, REVIEW, ASK, COMMENT, TOKENS, WEBHOOKS, MEMBERS}),
}


class _Operator:
    """The server's operator: trusted by every predicate, recorded as nobody."""

    is_authenticated = False
    is_superuser = False
    is_staff = False
    is_active = True
    pk = None

    def __repr__(self) -> str:
        return "OPERATOR"

    def get_username(self) -> str:
        return "the operator"


OPERATOR = _Operator()


def _everywhere(user: Any) -> bool:
    """Whether `user` holds every role in every team (the operator, an active superuser)."""
    if user is OPERATOR:
        return True
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


def memberships(user: Any) -> dict[int, str]:
    """Team id → `user`'s role there; read once per user object (a request's user)."""
    if user is None or user is OPERATOR or not user.is_authenticated or not user.is_active:
        return {}
    cache = getattr(user, "_console_roles", None)
    if cache is None:
        cache = dict(Membership.objects.filter(user=user).values_list("team_id", "role"))
        user._console_roles = cache
    return cache


def forget(user: Any) -> None:
    """Drop the roles read for `user` (after their membership changed)."""
    if hasattr(user, "_console_roles"):
        del user._console_roles


def team_id(on: Any) -> int | None:
    """The id of the team `on` is or belongs to (a team, a set, a token, a version, an id)."""
    if on is None or isinstance(on, int):
        return on
    if isinstance(on, Team):
        return on.pk
    if hasattr(on, "team_id"):
        return on.team_id
    if hasattr(on, "question_set"):  # a version, a run, a sample state
        return on.question_set.team_id
    raise TypeError(f"{on!r} belongs to no team")


def role_in(user: Any, on: Any) -> str | None:
    """`user`'s role in the team of `on` (ADMIN for the operator and a superuser), or None."""
    if _everywhere(user):
        return ADMIN
    return memberships(user).get(team_id(on))


def _may(user: Any, on: Any, right: str) -> bool:
    if _everywhere(user):
        return True
    if on is None:
        return any(right in RIGHTS[role] for role in memberships(user).values())
    role = memberships(user).get(team_id(on))
    return role is not None and right in RIGHTS[role]


def may_read(user: Any, on: Any) -> bool:
    """See the team's sets at all (any role there); None: a member of some team."""
    if _everywhere(user):
        return True
    roles = memberships(user)
    return bool(roles) if on is None else team_id(on) in roles


def may_write(user: Any, on: Any) -> bool:
    """Create and edit sets, drafts and sample states; submit a draft; label states."""
    return _may(user, on, WRITE)


def may_review(user: Any, on: Any) -> bool:
    """Approve, request changes, move labels, settle disputes, change a set's settings."""
    return _may(user, on, REVIEW)


def may_ask_live(user: Any, on: Any) -> bool:
    """Spend a provider call: preview, batch runs, tries, controls, live comparison columns."""
    return _may(user, on, ASK)


def may_comment(user: Any, on: Any) -> bool:
    return _may(user, on, COMMENT)


def may_manage_tokens(user: Any, on: Any) -> bool:
    """Create and revoke the team's API tokens."""
    return _may(user, on, TOKENS)


def may_manage_webhooks(user: Any, on: Any) -> bool:
    return _may(user, on, WEBHOOKS)


def may_manage_team(user: Any, on: Any) -> bool:
    """Add, change and remove the team's members; move sets to or from it; read its audit log."""
    return _may(user, on, MEMBERS)


def readable_teams(user: Any) -> Any:
    """The ids of the teams `user` reads, for a query's `team__in` (a subquery, so a lookup
    costs no query of its own); None: every team (the operator, a superuser)."""
    if _everywhere(user):
        return None
    if user is None or not user.is_authenticated or not user.is_active:
        return []
    return Membership.objects.filter(user=user).values("team_id")


def teams_where(user: Any, predicate: Any) -> list[Team]:
    """The teams where `predicate(user, team)` holds, by name."""
    teams = Team.objects.all()
    if not _everywhere(user):
        teams = teams.filter(pk__in=list(memberships(user)))
    return [team for team in teams if predicate(user, team)]


def recorded_as(user: Any) -> Any:
    """The user a record names: a signed-in person, or nobody (the operator, anonymous)."""
    return user if user is not None and user.is_authenticated else None
