"""The application's API tokens: created and revoked by reviewers and staff, stored hashed,
shown once, each of a scope (`read`: fetch exports; `ingest`: post production states) and for
the sets it names; the bearer check of the API, and the one rule of what a token may do
(`api_token_permit`)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from questions import roles
from questions.models import APIToken, QuestionSet
from questions.services.errors import Invalid, NotAllowed, a_name, require

TOKEN_MANAGERS_ONLY = "Only reviewers and staff manage API tokens."

READ, INGEST = APIToken.Scope.READ.value, APIToken.Scope.INGEST.value
SCOPES = (READ, INGEST)


def _named_sets(scope: str, slugs: Iterable[str]) -> list[QuestionSet]:
    """The sets a new token names, each found by its slug; an ingest token names one at least."""
    wanted = list(dict.fromkeys(s.strip() for s in slugs if s and s.strip()))
    found = {qs.slug: qs for qs in QuestionSet.objects.filter(slug__in=wanted)}
    missing = [slug for slug in wanted if slug not in found]
    if missing:
        raise Invalid(f"There is no set {missing[0][:64]}.", code="no_such_set")
    if scope == INGEST and not wanted:
        raise Invalid(
            "An ingest token names the sets it posts states to: give one set at least "
            "(--set SLUG).",
            code="ingest_without_sets",
        )
    return [found[slug] for slug in wanted]


def api_token_create(
    *, name: str, user: Any, scope: str = READ, sets: Iterable[str] = ()
) -> tuple[APIToken, str]:
    """A new token: returns the record and the token itself, which is never stored. `scope` is
    `read` (fetch exports: of the sets named, or of every set when none is) or `ingest` (post
    production states, to the sets named only); `sets` are slugs."""
    require(user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY)
    if scope not in SCOPES:
        raise Invalid(
            f"A token's scope is {' or '.join(SCOPES)}, not {str(scope)[:20]!r}.", code="scope"
        )
    name = a_name((name or "").strip(), "The token's name")
    if not name:
        raise Invalid("A token needs a name (who or what uses it).")
    limit = APIToken._meta.get_field("name").max_length
    if len(name) > limit:
        raise Invalid(f"A token's name has {len(name)} characters; at most {limit}.")
    raw = f"dct_{secrets.token_urlsafe(32)}"
    named = _named_sets(scope, sets)
    with transaction.atomic():
        token = APIToken.objects.create(
            name=name,
            scope=scope,
            prefix=raw[:10],
            token_sha256=hashlib.sha256(raw.encode()).hexdigest(),
            created_by=roles.recorded_as(user),
        )
        token.question_sets.set(named)
    return token, raw


def api_token_revoke(*, token: APIToken, user: Any) -> APIToken:
    """Revoke a token for good; the export API refuses it from now on."""
    require(user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


#: a token's last use is noted at most this often: a read does not write on every request
LAST_USED_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class Bearer:
    """An active token as a request presents it: which, its scope, and whether it names sets at
    all and the set the request is about."""

    id: int
    scope: str
    names_sets: bool
    names_set: bool


def api_token_authenticate(raw: str, *, slug: str = "") -> Bearer | None:
    """The active token a bearer string names, with whether it names the set `slug`, and its
    last use noted (to the minute); None otherwise. One plain statement on the runtime's hot
    path (see `exports.export_ref`); the write happens at most once a minute."""
    if not raw:
        return None
    digest = hashlib.sha256(raw.encode()).hexdigest()
    now = timezone.now()
    cutoff = now - LAST_USED_EVERY
    q = connection.ops.quote_name
    table = q(APIToken._meta.db_table)
    pk = q(APIToken._meta.pk.column)
    used = q(APIToken._meta.get_field("last_used_at").column)
    through = APIToken.question_sets.through
    links = q(through._meta.db_table)
    link_token = q(through._meta.get_field("apitoken").column)
    link_set = q(through._meta.get_field("questionset").column)
    sets = q(QuestionSet._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.{pk}, (t.{used} IS NULL OR t.{used} <= %s), "
            f"t.{q(APIToken._meta.get_field('scope').column)}, "
            f"EXISTS (SELECT 1 FROM {links} m WHERE m.{link_token} = t.{pk}), "
            f"EXISTS (SELECT 1 FROM {links} m JOIN {sets} s ON s.{q(QuestionSet._meta.pk.column)}"
            f" = m.{link_set} WHERE m.{link_token} = t.{pk} "
            f"AND s.{q(QuestionSet._meta.get_field('slug').column)} = %s) "
            f"FROM {table} t "
            f"WHERE t.{q(APIToken._meta.get_field('token_sha256').column)} = %s "
            f"AND t.{q(APIToken._meta.get_field('revoked_at').column)} IS NULL",
            [connection.ops.adapt_datetimefield_value(cutoff), slug, digest],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, stale, scope, names_sets, names_set = row
    if stale:
        # conditional, so several processes that saw an old value write it once between them
        APIToken.objects.filter(pk=token_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=cutoff)
        ).update(last_used_at=now)
    return Bearer(token_id, scope, bool(names_sets), bool(names_set))


def api_token_permit(bearer: Bearer, *, scope: str, slug: str) -> None:
    """Refuse (`NotAllowed`, a 403 naming why) a token used outside its scope or its sets: a
    read token fetches the exports of the sets it names (every set's when it names none); an
    ingest token posts states to the sets it names, and only to those."""
    if bearer.scope != scope:
        if scope == INGEST:
            raise NotAllowed(
                "This token's scope is read: it fetches exports and posts no states. Post "
                "with an ingest token for this set (manage.py questions token --name NAME "
                f"--scope ingest --set {slug}).",
                code="wrong_scope",
            )
        raise NotAllowed(
            "This token's scope is ingest: it posts production states and fetches no exports. "
            "Fetch with a read token (manage.py questions token --name NAME).",
            code="wrong_scope",
        )
    if scope == INGEST and not bearer.names_set:
        raise NotAllowed(
            f"This ingest token does not name the set {slug}: it posts only to the sets it names.",
            code="wrong_set",
        )
    if scope == READ and bearer.names_sets and not bearer.names_set:
        raise NotAllowed(
            f"This token does not name the set {slug}: it fetches only the exports of the sets "
            "it names.",
            code="wrong_set",
        )
