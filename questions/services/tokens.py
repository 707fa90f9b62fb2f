"""The runtime's API tokens: created and revoked by reviewers and staff, stored hashed, shown
once; and the bearer check of the export API."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from questions import roles
from questions.models import APIToken
from questions.services.errors import Invalid, a_name, require

TOKEN_MANAGERS_ONLY = "Only reviewers and staff manage API tokens."


def api_token_create(*, name: str, user: Any) -> tuple[APIToken, str]:
    """A new token: returns the record and the token itself, which is never stored."""
    require(user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY)
    name = a_name((name or "").strip(), "The token's name")
    if not name:
        raise Invalid("A token needs a name (who or what uses it).")
    limit = APIToken._meta.get_field("name").max_length
    if len(name) > limit:
        raise Invalid(f"A token's name has {len(name)} characters; at most {limit}.")
    raw = f"dct_{secrets.token_urlsafe(32)}"
    token = APIToken.objects.create(
        name=name,
        prefix=raw[:10],
        token_sha256=hashlib.sha256(raw.encode()).hexdigest(),
        created_by=roles.recorded_as(user),
    )
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


def api_token_authenticate(raw: str) -> int | None:
    """The id of the active token a bearer string names, with its last use noted (to the
    minute); None otherwise. One plain statement on the runtime's hot path (see
    `exports.export_ref`); the write happens at most once a minute."""
    if not raw:
        return None
    digest = hashlib.sha256(raw.encode()).hexdigest()
    now = timezone.now()
    cutoff = now - LAST_USED_EVERY
    q = connection.ops.quote_name
    table = q(APIToken._meta.db_table)
    used = q(APIToken._meta.get_field("last_used_at").column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {q(APIToken._meta.pk.column)}, ({used} IS NULL OR {used} <= %s) FROM {table} "
            f"WHERE {q(APIToken._meta.get_field('token_sha256').column)} = %s "
            f"AND {q(APIToken._meta.get_field('revoked_at').column)} IS NULL",
            [connection.ops.adapt_datetimefield_value(cutoff), digest],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, stale = row
    if stale:
        # conditional, so several processes that saw an old value write it once between them
        APIToken.objects.filter(pk=token_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=cutoff)
        ).update(last_used_at=now)
    return token_id
