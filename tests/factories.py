"""Factories for the tests: small functions over the services, no ad-hoc objects.create."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model

from questions import roles, services

_n = itertools.count(1)

#: the role in the default team that the groups of the console before teams became (0034)
_ROLE_OF_GROUPS = {
    (): roles.VIEWER,
    (roles.AUTHORS,): roles.AUTHOR,
    (roles.REVIEWERS,): roles.REVIEWER,
    (roles.AUTHORS, roles.REVIEWERS): roles.ADMIN,
}


def user(
    username: str | None = None,
    *,
    groups: tuple[str, ...] = (),
    password: str = "pw",
    role: str | None = None,
    team=None,
):
    """A user with `role` in `team` (the default team when None); without a role, the role the
    groups of before teams became there (none: a viewer, as every signed-in user read every
    set before teams)."""
    username = username or f"user{next(_n)}"
    u = get_user_model().objects.create_user(username, password=password)
    role = role or _ROLE_OF_GROUPS[tuple(sorted(groups))]
    services.member_set(
        team=team or services.team_default(), username=username, role=role, user=roles.OPERATOR
    )
    return u


def author(username: str | None = None, *, team=None):
    return user(username, role=roles.AUTHOR, team=team)


def reviewer(username: str | None = None, *, team=None):
    return user(username, role=roles.REVIEWER, team=team)


def admin(username: str | None = None, *, team=None):
    return user(username, role=roles.ADMIN, team=team)


def team(slug: str | None = None):
    return services.team_create(slug=slug or f"team-{next(_n)}", user=roles.OPERATOR)


def document(n: int = 1, options: int = 3) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for i in range(n):
        doc[f"q{i}"] = {
            "type": "choice",
            "instructions": f"Question {i}?",
            "criteria": {f"o{j}": f"option {j} of question {i}" for j in range(options - 1)}
            | {"other": "none of these"},
        }
    return doc


def question_set(slug: str | None = None, *, owner=None, doc: dict | None = None, team=None):
    owner = owner or author(team=team)
    qs = services.question_set_create(slug=slug or f"set-{next(_n)}", owner=owner, team=team)
    services.version_create(question_set=qs, document=doc or document(), author=owner)
    return qs


def draft(qs) -> Any:
    return services.open_draft(qs)


def tickets_draft(writer, count: int = 6, *, urgent_every: int = 2) -> Any:
    """The draft of a set of `providers.DOC` with `count` ticket states, all labelled: state i
    reads as urgent when i is a multiple of `urgent_every`, is expected urgent when i is even
    (so `urgent_every` = 3 makes some of them miss) and on the billing desk, tagged even or odd."""
    from tests.providers import DOC

    qs = question_set("s", owner=writer, doc=DOC)
    for i in range(count):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i}",
            state={
                "n": i,
                "ticket": "urgent, we are down" if i % urgent_every == 0 else "a question",
            },
            author=writer,
            expected={"urgent": i % 2 == 0, "desk": "billing"},
            tags=["even" if i % 2 == 0 else "odd"],
        )
    return services.open_draft(qs)
