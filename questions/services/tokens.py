"""The application's API tokens: each belongs to a team, created and revoked by the team's
admins and reviewers, stored hashed, shown once, of a scope (`read`: fetch exports; `ingest`:
post production states) and for the sets of its team it names, perhaps until it expires; the
bearer check of the API, and the one rule of what a token may do (`api_token_permit`): a token
reaches its own team's sets only — another team's answer 404, as a set that is not there."""

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
from questions.models import APIToken, QuestionSet, Team
from questions.services.audit import audit_record
from questions.services.errors import Invalid, NotAllowed, NotFound, a_name, require
from questions.services.teams import team_default

TOKEN_MANAGERS_ONLY = "Only the team's admins and reviewers manage its API tokens."

#: the longest a token may be made to last (`--expires`), in days
MAX_EXPIRY_DAYS = 3650

READ, INGEST = APIToken.Scope.READ.value, APIToken.Scope.INGEST.value
SCOPES = (READ, INGEST)


def _named_sets(team: Team, scope: str, slugs: Iterable[str]) -> list[QuestionSet]:
    """The sets of `team` a new token names, each found by its slug (another team's is not
    there); an ingest token names one at least."""
    wanted = list(dict.fromkeys(s.strip() for s in slugs if s and s.strip()))
    found = {qs.slug: qs for qs in QuestionSet.objects.filter(slug__in=wanted, team=team)}
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
    *,
    name: str,
    user: Any,
    scope: str = READ,
    sets: Iterable[str] = (),
    team: Team | None = None,
    expires_in: timedelta | None = None,
) -> tuple[APIToken, str]:
    """A new token of `team` (None: the default team): returns the record and the token
    itself, which is never stored. `scope` is `read` (fetch exports: of the team's sets named,
    or of every set of the team when none is) or `ingest` (post production states, to the sets
    named only); `sets` are slugs. With `expires_in` it stops working that long from now."""
    team = team or team_default()
    require(user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY, on=team)
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
    if expires_in is not None and not timedelta(0) < expires_in <= timedelta(MAX_EXPIRY_DAYS):
        raise Invalid(f"A token expires 1 to {MAX_EXPIRY_DAYS} days from now.", code="expires_in")
    raw = f"dct_{secrets.token_urlsafe(32)}"
    named = _named_sets(team, scope, sets)
    with transaction.atomic():
        token = APIToken.objects.create(
            team=team,
            expires_at=timezone.now() + expires_in if expires_in is not None else None,
            name=name,
            scope=scope,
            prefix=raw[:10],
            token_sha256=hashlib.sha256(raw.encode()).hexdigest(),
            created_by=roles.recorded_as(user),
        )
        token.question_sets.set(named)
        audit_record(
            action="token.created",
            actor=user,
            team=team,
            obj=token,
            detail={
                "scope": scope,
                "sets": [qs.slug for qs in named],
                "expires_at": token.expires_at.isoformat() if token.expires_at else None,
            },
        )
    return token, raw


def api_token_revoke(*, token: APIToken, user: Any) -> APIToken:
    """Revoke a token for good; the export API refuses it from now on."""
    require(user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY, on=token)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(action="token.revoked", actor=user, team=token, obj=token)
    return token


#: a token's last use is noted at most this often: a read does not write on every request
LAST_USED_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class Bearer:
    """An active token as a request presents it: which, its scope, whether the set the request
    is about is of its team, and whether it names sets at all and that set."""

    id: int
    scope: str
    names_sets: bool
    names_set: bool
    in_team: bool = True


def api_token_authenticate(raw: str, *, slug: str = "") -> Bearer | None:
    """The active token (not revoked, not expired) a bearer string names, with whether the set
    `slug` is of its team and whether it names it, and its last use noted (to the minute);
    None otherwise. One plain statement on the runtime's hot path (see `exports.export_ref`);
    the write happens at most once a minute."""
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
    set_slug = q(QuestionSet._meta.get_field("slug").column)
    set_team = q(QuestionSet._meta.get_field("team").column)
    token_team = q(APIToken._meta.get_field("team").column)
    expires = q(APIToken._meta.get_field("expires_at").column)
    at = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.{pk}, (t.{used} IS NULL OR t.{used} <= %s), "
            f"t.{q(APIToken._meta.get_field('scope').column)}, "
            f"EXISTS (SELECT 1 FROM {links} m WHERE m.{link_token} = t.{pk}), "
            f"EXISTS (SELECT 1 FROM {links} m JOIN {sets} s ON s.{q(QuestionSet._meta.pk.column)}"
            f" = m.{link_set} WHERE m.{link_token} = t.{pk} "
            f"AND s.{set_slug} = %s), "
            f"EXISTS (SELECT 1 FROM {sets} s WHERE s.{set_slug} = %s "
            f"AND s.{set_team} = t.{token_team}) "
            f"FROM {table} t "
            f"WHERE t.{q(APIToken._meta.get_field('token_sha256').column)} = %s "
            f"AND t.{q(APIToken._meta.get_field('revoked_at').column)} IS NULL "
            f"AND (t.{expires} IS NULL OR t.{expires} > %s)",
            [at(cutoff), slug, slug, digest, at(now)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, stale, scope, names_sets, names_set, in_team = row
    if stale:
        # conditional, so several processes that saw an old value write it once between them
        APIToken.objects.filter(pk=token_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=cutoff)
        ).update(last_used_at=now)
    return Bearer(token_id, scope, bool(names_sets), bool(names_set), bool(in_team))


def api_token_permit(bearer: Bearer, *, scope: str, slug: str) -> None:
    """Refuse (`NotAllowed`, a 403 naming why) a token used outside its scope or its sets: a
    read token fetches the exports of the sets it names (every set's of its team when it names
    none); an ingest token posts states to the sets it names, and only to those. A set of
    another team (or none at all) is `NotFound`: the token learns nothing of it."""
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
    if not bearer.in_team:
        raise NotFound(f"There is no set {slug}.")
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
