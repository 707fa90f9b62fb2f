"""The refusals a service raises. Each carries the HTTP status and a code it means, so views and
the command line map the one hierarchy once (`questions.middleware`, the CLI's `handle`) instead
of reading message text.

    Refusal                      status, code, message
      ServiceError               what a page shows beside the form that asked (422 by default)
        Invalid         422      what was given breaks a rule
        Conflict        409      it does not fit the current state (stale revision, not a draft …)
        NotFound        404
        NotConfigured   503      the console lacks configuration the step needs
      NotAllowed        403      the person may not; a `PermissionDenied`, so Django answers 403
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils.text import slugify

from questions import roles
from questions.models import Team


class Refusal(Exception):
    """A refused change or ask, with a message for the person who asked for it."""

    status = 422
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "code": self.code, "detail": str(self)}


class ServiceError(Refusal):
    """A refusal to show beside what asked for it; the person can do something about it."""


class Invalid(ServiceError):
    """What was given breaks a rule (422)."""


class Conflict(ServiceError):
    """The change does not fit the current state of what it changes (409)."""

    status = 409
    code = "conflict"


class NotFound(ServiceError):
    """What the change names does not exist (404)."""

    status = 404
    code = "not_found"


class NotConfigured(ServiceError):
    """The console lacks the configuration the step needs (503)."""

    status = 503
    code = "not_configured"


class NotAllowed(Refusal, PermissionDenied):
    """The person may not take this step (403). A `PermissionDenied` too, so Django answers 403
    wherever a view lets it through."""

    status = 403
    code = "not_allowed"


MODEL_NAME_LIMIT = 200  # Decision.model_asked, DecisionAnswer.model, BatchRun.model


#: the longest free text a person writes here: a set's description, a review note or comment
TEXT_LIMIT = 4000


def storable(text: str, what: str, limit: int | None = None) -> str:
    """`text` unchanged, or `Invalid` naming `what` when it holds a NUL character, which no text
    here may hold (PostgreSQL refuses it; SQLite would keep it, so both refuse it alike), or
    when it is longer than `limit` characters."""
    if "\x00" in text:
        raise Invalid(f"{what} holds a NUL character (\\x00); remove it.", code="nul_character")
    if limit is not None and len(text) > limit:
        raise Invalid(f"{what} has {len(text):,} characters; at most {limit:,}.", code="too_long")
    return text


#: the characters that reorder what follows them (bidi embeddings, overrides, isolates): in a
#: name they make it read as something else ("evil" shown as "live")
REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069]")


def a_name(text: str, what: str) -> str:
    """A name people tell things apart by: storable, and free of reordering characters."""
    storable(text, what)
    found = REORDERING.search(text)
    if found:
        raise Invalid(
            f"{what} holds U+{ord(found.group()):04X}, a character that reorders the text after "
            "it, so the name would read as something else; remove it.",
            code="reordering_character",
        )
    return text


def model_name(model: str) -> str:
    """A model name as asked and recorded: at most 200 characters, no NUL; else `Invalid`."""
    storable(model, "The model name")
    if len(model) > MODEL_NAME_LIMIT:
        raise Invalid(
            f"The model name has {len(model)} characters; at most {MODEL_NAME_LIMIT}.",
            code="model_too_long",
        )
    return model


def require(actor: Any, allowed: Callable[[Any, Any], bool], message: str, *, on: Any) -> None:
    """Refuse unless `allowed(actor, on)` (a predicate of `roles`; `on` is the team the step
    acts in, or what belongs to it: a set, a token; None: any team): `NotFound` when `on` is of
    a team `actor` is no member of — one learns nothing of another team's sets, not even that
    they exist —, else `NotAllowed(message)`."""
    if on is not None and not roles.may_read(actor, on):
        raise NotFound(unseen(on))
    if not allowed(actor, on):
        raise NotAllowed(message)


def unseen(on: Any) -> str:
    """What a refusal says of something the actor may not see: what it says when it is not
    there at all."""
    slug = getattr(on, "slug", None) or getattr(getattr(on, "question_set", None), "slug", None)
    if slug is not None and not isinstance(on, Team):
        return f"There is no set {slug}."
    if isinstance(on, Team):
        return f"There is no team {on.slug}."
    return "There is no such thing."


#: what a set's slug may be (an HTML `pattern` reads it too: the `-` is escaped for its `v` flag)
SLUG = re.compile(r"[a-z0-9_\-]+")


def check_slug(slug: str, what: str = "set") -> str:
    """`slug` when it can name a set (or a team: `what`): lower-case letters, digits, `-` and
    `_`, at most 64; otherwise `Invalid`, with a slug that would do. Nothing is changed
    silently."""
    slug = (slug or "").strip()
    if not slug:
        raise Invalid(f"A {what} needs a slug: lower-case letters, digits, hyphens or underscores.")
    limit = Team._meta.get_field("slug").max_length
    if len(slug) > limit:
        raise Invalid(f"A slug has at most {limit} characters; this one has {len(slug)}.")
    if not SLUG.fullmatch(slug):
        suggestion = slugify(slug)[:limit]
        hint = f"; {suggestion!r} would do" if suggestion else ""
        raise Invalid(
            f"A slug is lower-case letters, digits, hyphens and underscores, not {slug!r}{hint}."
        )
    return slug
