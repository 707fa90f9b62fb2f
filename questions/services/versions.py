"""Sets and versions: create a set, draft, save, submit, discard, import.

Only a draft changes; a version in any other status is immutable, and this is the one place that
enforces it. A draft carries a revision counter: a save based on a stale revision is refused
with `StaleRevision`, and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from questions import roles
from questions.core import check, spec
from questions.models import QuestionSet, ReviewEvent, Team, Version
from questions.services.audit import audit_record
from questions.services.errors import (
    TEXT_LIMIT,
    Conflict,
    Invalid,
    a_name,
    check_slug,
    require,
    storable,
)
from questions.services.teams import team_default

WRITERS_ONLY = "Only authors change question sets."


class NotADraft(Conflict):
    code = "not_a_draft"

    def __init__(self, version: Version):
        super().__init__(
            f"Version {version.number} of {version.question_set.slug} is "
            f"{version.get_status_display()}; only a draft changes. Make a new draft from it."
        )


class StaleRevision(Conflict):
    """A save based on an older revision than the current one; `what` names the thing."""

    code = "stale_revision"

    def __init__(self, current: int, base: int, *, what: str = "This draft", version=None):
        self.version = version
        self.current = current
        self.base = base
        super().__init__(
            f"{what} was saved elsewhere (another tab or person) since you opened it: it is "
            f"at revision {current}, you started from {base}. Nothing was saved; what "
            "you typed is still here."
        )


class DraftExists(Conflict):
    code = "draft_exists"

    def __init__(self, draft: Version):
        self.draft = draft
        super().__init__(
            f"{draft.question_set.slug} already has an open draft, version {draft.number}; "
            "continue there, or finish it first."
        )


class InvalidContent(Invalid):
    code = "invalid_content"

    def __init__(self, what: str, errors: list[spec.Issue]):
        self.errors = errors
        shown = "; ".join(e.message for e in errors[:3])
        super().__init__(f"The {what} is invalid: {shown}" + (" …" if len(errors) > 3 else ""))


def document_text(document: Any) -> str:
    """How a document or a state is stored: JSON in its own key order, no padding."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def limits() -> spec.Limits:
    """The configured limits (DECISIONS__*): the ones every validation here uses."""
    return settings.DECISIONS_LIMITS


@transaction.atomic
def question_set_create(
    *, slug: str, name: str = "", description: str = "", owner: Any, team: Team | None = None
) -> QuestionSet:
    """A new, empty question set owned by `owner`, of `team` (None: the default team)."""
    team = team or team_default()
    require(owner, roles.may_write, WRITERS_ONLY, on=team)
    a_name(name, "The set's name")
    storable(description, "The set's description", TEXT_LIMIT)
    slug = check_slug(slug)
    if QuestionSet.objects.filter(slug=slug).exists():
        raise Conflict(f"A set called {slug} exists already.")
    question_set = QuestionSet(
        slug=slug, name=name or slug, description=description, owner=owner, team=team
    )
    try:
        question_set.full_clean()
    except ValidationError as exc:
        raise Invalid(_first_message(exc)) from None
    try:
        with transaction.atomic():
            question_set.save()
    except IntegrityError as exc:
        raise Conflict(f"A set called {slug} exists already.") from exc
    audit_record(action="set.created", actor=owner, obj=question_set, question_set=question_set)
    return question_set


STARTER_DOCUMENT: dict[str, Any] = {
    "first_question": {
        "type": "choice",
        "instructions": "",
        "criteria": {"yes": "", "no": "", "unclear": ""},
    }
}


@transaction.atomic
def question_set_start(
    *, slug: str, name: str = "", description: str = "", owner: Any, team: Team | None = None
) -> QuestionSet:
    """A new set with a first draft to write in (a starter choice), both or neither."""
    question_set = question_set_create(
        slug=slug, name=name, description=description, owner=owner, team=team
    )
    version_create(
        question_set=question_set, document=STARTER_DOCUMENT, author=owner, note="new set"
    )
    return question_set


def _first_message(exc: ValidationError) -> str:
    """One sentence from a model's validation, naming the field."""
    for field, messages in exc.message_dict.items():
        return f"{field}: {messages[0]}"
    return "; ".join(exc.messages)


def _lock_set(question_set: QuestionSet) -> QuestionSet:
    """Serialise writers of one set (numbering, the one open draft) on its row."""
    return QuestionSet.objects.select_for_update().get(pk=question_set.pk)


def _next_number(locked: QuestionSet) -> int:
    """Hand out the next number of a set locked by `_lock_set` (never one used before)."""
    locked.version_counter += 1
    locked.save(update_fields=["version_counter"])
    return locked.version_counter


def open_draft(question_set: QuestionSet) -> Version | None:
    """The set's one open draft, if it has one."""
    return question_set.versions.open_draft()


@transaction.atomic
def version_create(
    *,
    question_set: QuestionSet,
    document: dict[str, Any],
    author: Any,
    parent: Version | None = None,
    note: str = "",
    advice: dict[str, Any] | None = None,
) -> Version:
    """A new draft holding `document` (a questions map) and its `advice`, if any. Refused while
    the set has an open draft. The document may be work in progress; validity is checked on
    submission."""
    require(author, roles.may_write, WRITERS_ONLY, on=question_set)
    locked = _lock_set(question_set)
    draft = open_draft(locked)
    if draft is not None:
        raise DraftExists(draft)
    version = Version(
        question_set=locked,
        number=_next_number(locked),
        status=Version.Status.DRAFT,
        document_text=document_text(document),
        sha256=spec.sha256_of(document),
        parent=parent,
        author=author,
        advice_text=advice_text(advice),
    )
    try:
        with transaction.atomic():
            version.save()
    except IntegrityError as exc:  # a racing writer on a database without row locks
        draft = open_draft(locked)
        if draft is not None:
            raise DraftExists(draft) from exc
        raise Conflict("Another version was created at the same moment; try again.") from exc
    ReviewEvent.objects.create(
        version=version, kind=ReviewEvent.Kind.CREATED, actor=author, note=note
    )
    locked.save(update_fields=["updated_at"])
    audit_record(
        action="version.created",
        actor=author,
        obj=version,
        question_set=locked,
        detail={"from": parent.number if parent else None, "note": note[:200]},
    )
    return version


def version_draft_from(*, version: Version, author: Any, note: str = "") -> Version:
    """ "New draft from this version": any version, any status — its document and its advice,
    with `version` as the parent. "Keep as vN, continue" opens its draft the same way."""
    return version_create(
        question_set=version.question_set,
        document=version.document,
        author=author,
        parent=version,
        note=note or f"from version {version.number}",
        advice=version.advice,
    )


@transaction.atomic
def version_save(
    *,
    version: Version,
    document: dict[str, Any],
    base_revision: int,
    author: Any,
) -> Version:
    """Save a draft's document. Refused unless the version is a draft and `base_revision` is
    its current revision; on refusal nothing is written."""
    require(author, roles.may_write, WRITERS_ONLY, on=version.question_set)
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    if locked.revision != base_revision:
        raise StaleRevision(locked.revision, base_revision, version=locked)
    text = document_text(document)
    if text == locked.document_text or text == document_text(locked.document):
        return locked  # no edit: not a byte of the stored text changes, nor the revision
    locked.document_text = text
    locked.sha256 = spec.sha256_of(document)
    locked.revision += 1
    locked.save(update_fields=["document_text", "sha256", "revision", "updated_at"])
    _record_edit(locked, author)
    QuestionSet.objects.filter(pk=locked.question_set_id).update(updated_at=locked.updated_at)
    audit_record(
        action="version.saved",
        actor=author,
        obj=locked,
        question_set=locked.question_set,
        detail={"revision": locked.revision},
    )
    return locked


def _record_edit(version: Version, author: Any) -> None:
    """One `edited` event per person and run of saves: consecutive saves by the same author
    extend the last event instead of flooding the record."""
    last = version.events.order_by("-created_at", "-id").first()
    if last and last.kind == ReviewEvent.Kind.EDITED and last.actor_id == author.pk:
        last.note = f"revision {version.revision}"
        last.save(update_fields=["note"])
        return
    ReviewEvent.objects.create(
        version=version,
        kind=ReviewEvent.Kind.EDITED,
        actor=author,
        note=f"revision {version.revision}",
    )


@transaction.atomic
def version_submit(*, version: Version, author: Any, note: str = "") -> Version:
    """A draft, or a kept version, goes to review and freezes. Only a valid document is
    submitted, by an author."""
    require(author, roles.may_write, "Only authors submit a draft.", on=version.question_set)
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if locked.status not in (Version.Status.DRAFT, Version.Status.KEPT):
        raise NotADraft(locked)
    require_valid(locked, "draft")
    return move(locked, Version.Status.IN_REVIEW, ReviewEvent.Kind.SUBMITTED, author, note)


@transaction.atomic
def version_keep(*, version: Version, author: Any, note: str = "") -> Version:
    """ "Keep as vN and continue": the draft freezes as a kept version and a new draft from it
    opens; returns the new draft. A kept version is asked, run and compared like any other and
    may go to review later; nothing is sent for review by keeping. The set still has exactly
    one draft that changes, so "which text is being edited" keeps one answer."""
    require(author, roles.may_write, WRITERS_ONLY, on=version.question_set)
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    require_valid(locked, "draft")
    move(locked, Version.Status.KEPT, ReviewEvent.Kind.KEPT, author, note)
    return version_draft_from(
        version=locked, author=author, note=f"continues version {locked.number}"
    )


def require_valid(version: Version, what: str) -> spec.Document:
    """The parsed document of `version`, or `InvalidContent` under the configured limits; its
    advice must fit its questions too (a question removed or retyped since leaves advice that
    no longer does)."""
    result = check.validate(version.document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent(what, result.errors)
    errors = spec.validate_advice(version.advice, result.document.questions)
    if errors:
        raise InvalidContent("advice", errors)
    return result.document


def advice_text(advice: dict[str, Any] | None) -> str:
    """Advice as stored: JSON in the author's order, or empty for none."""
    return document_text(advice) if advice else ""


@transaction.atomic
def version_set_advice(*, version: Version, advice: Any, author: Any) -> Version:
    """Set a draft's advisory thresholds (`{}` or None clears them): advice for questions of the
    draft, a noul's `threshold` and a choice's `min_confidence` in 0..1. Refused unless the
    version is a draft and its questions are valid; on refusal nothing is written."""
    require(author, roles.may_write, WRITERS_ONLY, on=version.question_set)
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    result = check.validate(locked.document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("document", result.errors)
    errors = spec.validate_advice(advice or {}, result.document.questions)
    if errors:
        raise InvalidContent("advice", errors)
    locked.advice_text = advice_text(advice)
    locked.save(update_fields=["advice_text", "updated_at"])
    audit_record(
        action="version.saved",
        actor=author,
        obj=locked,
        question_set=locked.question_set,
        detail={"advice": bool(advice)},
    )
    return locked


#: the audit log's action for each step of the workflow
MOVED = {
    ReviewEvent.Kind.SUBMITTED: "version.submitted",
    ReviewEvent.Kind.KEPT: "version.kept",
    ReviewEvent.Kind.APPROVED: "version.approved",
    ReviewEvent.Kind.CHANGES_REQUESTED: "version.changes_requested",
}


def move(version: Version, status: str, kind: str, actor: Any, note: str) -> Version:
    """One step of the workflow: the new status, and its event on the record and the log."""
    before = version.status
    version.status = status
    version.save(update_fields=["status", "updated_at"])
    ReviewEvent.objects.create(version=version, kind=kind, actor=actor, note=note)
    audit_record(
        action=MOVED[kind],
        actor=actor,
        obj=version,
        question_set=version.question_set,
        detail={"from": before, "to": status},
    )
    return version


@transaction.atomic
def version_discard(*, version: Version, author: Any) -> None:
    """Delete an open draft (its number is not reused)."""
    require(author, roles.may_write, WRITERS_ONLY, on=version.question_set)
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    audit_record(
        action="version.discarded", actor=author, obj=locked, question_set=locked.question_set
    )
    locked.delete()


def version_import(
    *, slug: str, value: Any, author: Any, name: str = "", team: Team | None = None
) -> Version:
    """A new draft from a document in any form (bare map, request body, export); the set is
    created when new, in `team` (None: the default team). Invalid input changes nothing;
    `Conflict` when the set exists in another team than the one named."""
    existing = QuestionSet.objects.filter(slug=check_slug(slug)).first()
    require(author, roles.may_write, WRITERS_ONLY, on=existing or team or team_default())
    if existing is not None and team is not None and existing.team_id != team.pk:
        raise Conflict(
            f"{slug} belongs to team {existing.team.slug}, not {team.slug}; move it with "
            f"questions team --move-set {slug} --to {team.slug}."
        )
    result = check.validate(value, limits=limits())
    if result.document is None:
        raise InvalidContent("document", result.errors)
    with transaction.atomic():
        question_set = QuestionSet.objects.filter(slug=slug).first()
        if question_set is None:
            question_set = question_set_create(slug=slug, name=name, owner=author, team=team)
        return version_create(
            question_set=question_set,
            document=result.document.questions_json(),
            author=author,
            note=f"imported ({result.form} document)",
            advice=result.document.meta.get("advice"),
        )
