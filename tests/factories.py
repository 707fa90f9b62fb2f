"""Factories for the tests: small functions over the services, no ad-hoc objects.create."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from questions import roles, services

_n = itertools.count(1)


def user(username: str | None = None, *, groups: tuple[str, ...] = (), password: str = "pw"):
    username = username or f"user{next(_n)}"
    u = get_user_model().objects.create_user(username, password=password)
    for name in groups:
        u.groups.add(Group.objects.get_or_create(name=name)[0])
    return u


def author(username: str | None = None):
    return user(username, groups=(roles.AUTHORS,))


def reviewer(username: str | None = None):
    return user(username, groups=(roles.REVIEWERS,))


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


def question_set(slug: str | None = None, *, owner=None, doc: dict | None = None):
    owner = owner or author()
    qs = services.question_set_create(slug=slug or f"set-{next(_n)}", owner=owner)
    services.version_create(question_set=qs, document=doc or document(), author=owner)
    return qs


def draft(qs) -> Any:
    return services.open_draft(qs)
