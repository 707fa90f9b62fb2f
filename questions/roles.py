"""Who may do what, as named predicates. The services ask them before they change
anything or spend a provider call (`services.errors.require`); views ask them only to decide what
to show.

Authors write question sets and sample states; reviewers approve, send back and move labels;
both ask the model (preview, batch runs, live comparison columns) and comment on a review;
reviewers and staff manage the runtime's API tokens; every signed-in user reads. A superuser has
every role. `OPERATOR` is the person at the server's command line (`manage.py questions …`
without `--user`, the demo data): shell access to the server is already every right there is.
"""

from __future__ import annotations

from typing import Any

AUTHORS = "authors"
REVIEWERS = "reviewers"


class _Operator:
    """The server's operator: trusted by every predicate, recorded as nobody."""

    is_authenticated = False
    is_superuser = False
    is_staff = False
    pk = None

    def __repr__(self) -> str:
        return "OPERATOR"

    def get_username(self) -> str:
        return "the operator"


OPERATOR = _Operator()


def _in_group(user: Any, group: str) -> bool:
    if user is OPERATOR:
        return True
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    cache = getattr(user, "_console_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._console_groups = cache
    return group in cache


def is_author(user: Any) -> bool:
    return _in_group(user, AUTHORS)


def is_reviewer(user: Any) -> bool:
    return _in_group(user, REVIEWERS)


def may_write(user: Any) -> bool:
    """Create and edit sets, drafts and sample states; submit a draft."""
    return is_author(user)


def may_review(user: Any) -> bool:
    """Approve, request changes, move labels."""
    return is_reviewer(user)


def may_ask_live(user: Any) -> bool:
    """Spend a provider call: preview, batch runs, live comparison columns."""
    return is_author(user) or is_reviewer(user)


def may_comment(user: Any) -> bool:
    return is_author(user) or is_reviewer(user)


def may_manage_tokens(user: Any) -> bool:
    return is_reviewer(user) or (user is not None and bool(getattr(user, "is_staff", False)))


def recorded_as(user: Any) -> Any:
    """The user a record names: a signed-in person, or nobody (the operator, anonymous)."""
    return user if user is not None and user.is_authenticated else None
