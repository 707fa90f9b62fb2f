"""The audit log's one writer: every service that changes state calls `audit_record` in the
transaction of its change (so a change rolled back leaves no row, and no change is left without
one), naming who, the action, the object and its team. Where the request came from — the
address and the way (web, API, command line) — is the request's `origin`, set by the console's
middleware for each request (`console.origin`); without one it is the command line.

The services' own record was chosen over `django-auditlog` (docs/operating.md, "Audit log"):
the actions are the domain's (submitted, approved, a label moved, a run cancelled, a sign-in),
several are written with `QuerySet.update` or `bulk_create`, which model signals never see, and
a row here is never changed nor deleted (`models.audit.AppendOnly`).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from questions import roles
from questions.models import AuditEntry, QuestionSet


@dataclass(frozen=True)
class Origin:
    via: str = AuditEntry.Via.CLI
    address: str | None = None


#: where the actions of the current request come from (the command line when no request set it)
origin: contextvars.ContextVar[Origin | None] = contextvars.ContextVar("audit_origin", default=None)

#: the actions, as the log and its filters name them
ACTIONS = (
    "sign_in",
    "team.created",
    "member.added",
    "member.role_changed",
    "member.removed",
    "set.created",
    "set.moved",
    "set.settings_changed",
    "version.created",
    "version.saved",
    "version.submitted",
    "version.kept",
    "version.discarded",
    "version.approved",
    "version.changes_requested",
    "version.commented",
    "label.moved",
    "lint.accepted",
    "state.created",
    "state.changed",
    "state.deleted",
    "states.imported",
    "states.ingested",
    "states.purged",
    "state.labelled",
    "state.label_undone",
    "dispute.settled",
    "records.imported",
    "run.started",
    "run.cancelled",
    "token.created",
    "token.revoked",
    "webhook.created",
    "webhook.deleted",
)


def _actor(actor: Any) -> tuple[Any, str]:
    """The user a row names (None: the operator, a token) and the name it keeps."""
    if actor is None or actor is roles.OPERATOR:
        return None, "the operator"
    if isinstance(actor, str):  # a token, by the id a request presented
        return None, actor
    if getattr(actor, "is_authenticated", False):
        return actor, actor.get_username()
    name = getattr(actor, "name", None)  # an API token
    return None, f"token {name}" if name else str(actor)[:150]


def _names(obj: Any) -> tuple[str, str, str]:
    """An object's type, id and how the log shows it."""
    if obj is None:
        return "", "", ""
    kind = type(obj).__name__.lower()
    return kind[:20], str(getattr(obj, "pk", "") or "")[:64], str(obj)[:200]


def audit_record(
    *,
    action: str,
    actor: Any,
    team: Any = None,
    obj: Any = None,
    question_set: QuestionSet | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    """One row: `actor` did `action` to `obj` (of `question_set`), in `team` (a team or what
    belongs to one; None: the set's team, or none, as a sign-in's)."""
    if action not in ACTIONS:
        raise ValueError(f"{action!r} is no audited action")
    user, name = _actor(actor)
    if team is None and question_set is not None:
        team = question_set.team_id
    kind, pk, shown = _names(obj)
    here = origin.get() or Origin()
    return AuditEntry.objects.create(
        team_id=roles.team_id(team),
        actor=user,
        actor_name=name[:150],
        action=action,
        object_type=kind,
        object_id=pk,
        object_repr=shown,
        set_slug=question_set.slug if question_set is not None else "",
        detail=detail or {},
        address=here.address,
        via=here.via,
    )


def audit_sign_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    """Django's `user_logged_in`: one row, of no team (each team's log shows its members')."""
    backend = getattr(user, "backend", "") or ""
    how = "identity provider" if backend.endswith(".SignInBackend") else "password"
    audit_record(action="sign_in", actor=user, detail={"how": how})
