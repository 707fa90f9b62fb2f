"""Who may do what: authors write, reviewers review, everyone signed in reads."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

AUTHORS = "authors"
REVIEWERS = "reviewers"


def _in_group(user: AbstractBaseUser | AnonymousUser, group: str) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    cache = getattr(user, "_console_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._console_groups = cache
    return group in cache


def is_author(user) -> bool:
    return _in_group(user, AUTHORS)


def is_reviewer(user) -> bool:
    return _in_group(user, REVIEWERS)
