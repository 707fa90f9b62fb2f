"""The audit log's reads: a team's rows as its page, its exports (CSV, JSONL) and
`questions audit` filter them, and a row as they give it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from questions.models import AuditEntry, Team


@dataclass(frozen=True)
class AuditFilter:
    """What the audit page, its exports and `questions audit` filter by (empty: any)."""

    user: str = ""
    action: str = ""
    set_slug: str = ""
    since: datetime | None = None
    until: datetime | None = None


#: rows a page of the audit log shows
AUDIT_PAGE = 50


def audit_rows(team: Team, found: AuditFilter) -> QuerySet[AuditEntry]:
    """The team's rows (and its members' sign-ins), newest first, as `found` filters them."""
    rows = AuditEntry.objects.of_team(team)
    if found.user:
        rows = rows.filter(actor_name=found.user)
    if found.action:
        rows = rows.filter(action=found.action)
    if found.set_slug:
        rows = rows.filter(set_slug=found.set_slug)
    if found.since is not None:
        rows = rows.filter(at__gte=found.since)
    if found.until is not None:
        rows = rows.filter(at__lt=found.until)
    return rows.order_by("-at", "-id")


def row_json(row: AuditEntry) -> dict[str, Any]:
    """A row as the exports and the command line give it."""
    return {
        "at": row.at.isoformat(),
        "user": row.actor_name,
        "action": row.action,
        "object_type": row.object_type,
        "object_id": row.object_id,
        "object": row.object_repr,
        "set": row.set_slug or None,
        "detail": row.detail,
        "address": row.address,
        "via": row.via,
    }


def export_rows(team: Team, found: AuditFilter) -> Iterator[dict[str, Any]]:
    """Every row `found` filters, as the exports give them, read a chunk at a time."""
    for row in audit_rows(team, found).iterator(chunk_size=1000):
        yield row_json(row)
