"""Every write (DESIGN.md §4, §7): one function per state change, keyword-only, atomic.

Only a draft changes; a version in any other status is immutable, and this is the one place that
enforces it. A draft carries a revision counter: a save based on a stale revision is refused
with `StaleRevision`, and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from questions import backends, roles, spec
from questions.backends import Outcome
from questions.models import (
    APIToken,
    BatchItem,
    BatchRun,
    Decision,
    DecisionAnswer,
    Label,
    LabelMove,
    QuestionSet,
    ReviewEvent,
    SampleState,
    SampleStateRevision,
    Version,
)

log = logging.getLogger("questions.decisions")


class ServiceError(Exception):
    """A refused change, with a message for the person who asked for it."""


class NotADraft(ServiceError):
    def __init__(self, version: Version):
        super().__init__(
            f"Version {version.number} of {version.question_set.slug} is "
            f"{version.get_status_display()}; only a draft changes. Make a new draft from it."
        )


class StaleRevision(ServiceError):
    def __init__(self, version: Version, base: int):
        self.version = version
        self.base = base
        super().__init__(
            f"This draft was saved elsewhere (another tab or person) since you opened it: it is "
            f"at revision {version.revision}, you started from {base}. Nothing was saved; what "
            "you typed is still here."
        )


class DraftExists(ServiceError):
    def __init__(self, draft: Version):
        self.draft = draft
        super().__init__(
            f"{draft.question_set.slug} already has an open draft, version {draft.number}; "
            "continue there, or finish it first."
        )


class InvalidContent(ServiceError):
    def __init__(self, what: str, errors: list[spec.Issue]):
        self.errors = errors
        shown = "; ".join(e.message for e in errors[:3])
        super().__init__(f"The {what} is invalid: {shown}" + (" …" if len(errors) > 3 else ""))


def document_text(document: Any) -> str:
    """How a document or a state is stored: JSON in its own key order, no padding."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _limits() -> spec.Limits:
    return settings.DECISIONS_LIMITS


# --- sets and versions ---------------------------------------------------------------------------


@transaction.atomic
def question_set_create(
    *, slug: str, name: str = "", description: str = "", owner: AbstractBaseUser
) -> QuestionSet:
    slug = slugify(slug)
    if not slug:
        raise ServiceError("A set needs a slug: letters, digits, hyphens or underscores.")
    if QuestionSet.objects.filter(slug=slug).exists():
        raise ServiceError(f"A set called {slug} exists already.")
    question_set = QuestionSet(slug=slug, name=name or slug, description=description, owner=owner)
    question_set.full_clean()
    try:
        with transaction.atomic():
            question_set.save()
    except IntegrityError as exc:
        raise ServiceError(f"A set called {slug} exists already.") from exc
    return question_set


def _lock_set(question_set: QuestionSet) -> QuestionSet:
    """Serialise writers of one set (numbering, the one open draft) on its row."""
    return QuestionSet.objects.select_for_update().get(pk=question_set.pk)


def _next_number(locked: QuestionSet) -> int:
    """Hand out the next number of a set locked by `_lock_set` (never one used before)."""
    locked.version_counter += 1
    locked.save(update_fields=["version_counter"])
    return locked.version_counter


def open_draft(question_set: QuestionSet) -> Version | None:
    return question_set.versions.filter(status=Version.Status.DRAFT).first()


@transaction.atomic
def version_create(
    *,
    question_set: QuestionSet,
    document: dict[str, Any],
    author: AbstractBaseUser,
    parent: Version | None = None,
    note: str = "",
) -> Version:
    """A new draft holding `document` (a questions map). Refused while the set has an open
    draft. The document may be work in progress; validity is checked on submission."""
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
    )
    try:
        with transaction.atomic():
            version.save()
    except IntegrityError as exc:  # a racing writer on a database without row locks
        draft = open_draft(locked)
        if draft is not None:
            raise DraftExists(draft) from exc
        raise ServiceError("Another version was created at the same moment; try again.") from exc
    ReviewEvent.objects.create(
        version=version, kind=ReviewEvent.Kind.CREATED, actor=author, note=note
    )
    locked.save(update_fields=["updated_at"])
    return version


def version_draft_from(*, version: Version, author: AbstractBaseUser) -> Version:
    """ "New draft from this version": any version, any status."""
    return version_create(
        question_set=version.question_set,
        document=version.document,
        author=author,
        parent=version,
        note=f"from version {version.number}",
    )


@transaction.atomic
def version_save(
    *,
    version: Version,
    document: dict[str, Any],
    base_revision: int,
    author: AbstractBaseUser,
) -> Version:
    """Save a draft's document. Refused unless the version is a draft and `base_revision` is
    its current revision; on refusal nothing is written."""
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    if locked.revision != base_revision:
        raise StaleRevision(locked, base_revision)
    text = document_text(document)
    if text == locked.document_text:
        return locked
    locked.document_text = text
    locked.sha256 = spec.sha256_of(document)
    locked.revision += 1
    locked.save(update_fields=["document_text", "sha256", "revision", "updated_at"])
    _record_edit(locked, author)
    QuestionSet.objects.filter(pk=locked.question_set_id).update(updated_at=locked.updated_at)
    return locked


def _record_edit(version: Version, author: AbstractBaseUser) -> None:
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
def version_submit(*, version: Version, author: AbstractBaseUser, note: str = "") -> Version:
    """A draft goes to review and freezes. Only a valid document is submitted, by an author."""
    _require(author, roles.is_author, "authors")
    locked = Version.objects.select_for_update().select_related("question_set").get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    _require_valid(locked, "draft")
    return _move(locked, Version.Status.IN_REVIEW, ReviewEvent.Kind.SUBMITTED, author, note)


def _require_valid(version: Version, what: str) -> None:
    result = spec.validate(version.document, limits=_limits(), lints=False)
    if not result.valid:
        raise InvalidContent(what, result.errors)


def _move(version: Version, status: str, kind: str, actor: AbstractBaseUser, note: str) -> Version:
    """One step of the workflow: the new status, and its event on the record."""
    version.status = status
    version.save(update_fields=["status", "updated_at"])
    ReviewEvent.objects.create(version=version, kind=kind, actor=actor, note=note)
    return version


@transaction.atomic
def version_discard(*, version: Version, author: AbstractBaseUser) -> None:
    """Delete an open draft (its number is not reused)."""
    locked = Version.objects.select_for_update().get(pk=version.pk)
    if not locked.is_draft:
        raise NotADraft(locked)
    locked.delete()


def version_import(*, slug: str, value: Any, author: AbstractBaseUser, name: str = "") -> Version:
    """A new draft from a document in any form (bare map, request body, export); the set is
    created when new. Invalid input changes nothing."""
    result = spec.validate(value, limits=_limits())
    if not result.valid:
        raise InvalidContent("document", result.errors)
    with transaction.atomic():
        question_set = QuestionSet.objects.filter(slug=slugify(slug)).first()
        if question_set is None:
            question_set = question_set_create(slug=slug, name=name, owner=author)
        return version_create(
            question_set=question_set,
            document=result.document.questions_json(),
            author=author,
            note=f"imported ({result.form} document)",
        )


# --- sample states -------------------------------------------------------------------------------


def _clean_state_fields(
    *, name: str, state: Any, expected: dict[str, Any] | None, tags: Iterable[str] | None
) -> tuple[str, str, dict[str, Any], list[str]]:
    name = (name or "").strip()
    if not name:
        raise ServiceError("A sample state needs a name.")
    if len(name) > 128:
        raise ServiceError(f"A sample state's name has {len(name)} characters; at most 128.")
    errors = spec.validate_state(state, limits=_limits())
    if errors:
        raise InvalidContent("state", errors)
    expected = dict(expected or {})
    for qid, answer in expected.items():
        if not isinstance(qid, str) or not (
            isinstance(answer, str | bool) or (isinstance(answer, int) and answer >= 0)
        ):
            raise ServiceError(
                f"Expected answer for `{qid}` must be an option name, a level number or true/false."
            )
    tags = sorted({t.strip() for t in (tags or []) if t and t.strip()})
    return name, document_text(state), expected, tags


@transaction.atomic
def sample_state_create(
    *,
    question_set: QuestionSet,
    name: str,
    state: Any,
    author: AbstractBaseUser,
    expected: dict[str, Any] | None = None,
    tags: Iterable[str] | None = None,
) -> SampleState:
    name, text, expected, tags = _clean_state_fields(
        name=name, state=state, expected=expected, tags=tags
    )
    if question_set.sample_states.filter(name=name).exists():
        raise ServiceError(f"{question_set.slug} has a sample state called {name} already.")
    sample = SampleState.objects.create(
        question_set=question_set, name=name, state_text=text, expected=expected, tags=tags
    )
    _record_state_revision(sample, author)
    return sample


@transaction.atomic
def sample_state_update(
    *,
    sample: SampleState,
    name: str,
    state: Any,
    author: AbstractBaseUser,
    base_revision: int,
    expected: dict[str, Any] | None = None,
    tags: Iterable[str] | None = None,
) -> SampleState:
    locked = SampleState.objects.select_for_update().get(pk=sample.pk)
    if locked.revision != base_revision:
        raise ServiceError(
            f"Sample state {locked.name} was saved elsewhere since you opened it (revision "
            f"{locked.revision}, you started from {base_revision}). Nothing was saved; what you "
            "typed is still here."
        )
    name, text, expected, tags = _clean_state_fields(
        name=name, state=state, expected=expected, tags=tags
    )
    if name != locked.name and locked.question_set.sample_states.filter(name=name).exists():
        raise ServiceError(f"{locked.question_set.slug} has a sample state called {name} already.")
    unchanged = (locked.name, locked.state_text, locked.expected, locked.tags) == (
        name,
        text,
        expected,
        tags,
    )
    if unchanged:
        return locked
    locked.name, locked.state_text, locked.expected, locked.tags = name, text, expected, tags
    locked.revision += 1
    locked.save(update_fields=["name", "state_text", "expected", "tags", "revision", "updated_at"])
    _record_state_revision(locked, author)
    return locked


def sample_state_duplicate(*, sample: SampleState, author: AbstractBaseUser) -> SampleState:
    existing = set(sample.question_set.sample_states.values_list("name", flat=True))
    name = f"{sample.name} (copy)"
    n = 2
    while name in existing:
        name = f"{sample.name} (copy {n})"
        n += 1
    return sample_state_create(
        question_set=sample.question_set,
        name=name,
        state=sample.state,
        author=author,
        expected=sample.expected,
        tags=sample.tags,
    )


@transaction.atomic
def sample_state_delete(*, sample: SampleState) -> None:
    """Delete a sample state and its history — unless a batch run asked it: a run keeps the
    exact content it ran on, so that state stays."""
    runs = BatchItem.objects.filter(sample_state__sample_state=sample).values("run").distinct()
    if runs.exists():
        raise ServiceError(
            f"Sample state {sample.name} was asked in {runs.count()} batch run(s), which keep "
            "the exact content they ran on; it cannot be deleted. Rename it or change its tags "
            "instead."
        )
    sample.delete()


def _record_state_revision(sample: SampleState, author: AbstractBaseUser) -> None:
    SampleStateRevision.objects.create(
        sample_state=sample,
        revision=sample.revision,
        name=sample.name,
        state_text=sample.state_text,
        state_sha256=spec.state_sha256(sample.state),
        expected=sample.expected,
        tags=sample.tags,
        author=author,
    )


def sample_states_import(
    *, question_set: QuestionSet, items: list[Any], author: AbstractBaseUser
) -> list[SampleState]:
    """All or nothing: every item is {"name", "state", "expected"?, "tags"?}."""
    created = []
    with transaction.atomic():
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "name" not in item or "state" not in item:
                raise ServiceError(
                    f"item {i + 1}: needs an object with name and state (null is a state)"
                )
            unknown = set(item) - {"name", "state", "expected", "tags"}
            if unknown:
                raise ServiceError(f"item {i + 1}: unknown keys {sorted(unknown)}")
            if not isinstance(item["name"], str):
                raise ServiceError(f"item {i + 1}: name must be a string")
            expected = item.get("expected") or {}
            if not isinstance(expected, dict):
                raise ServiceError(f"item {i + 1}: expected must be an object")
            tags = item.get("tags") or []
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise ServiceError(f"item {i + 1}: tags must be an array of strings")
            try:
                created.append(
                    sample_state_create(
                        question_set=question_set,
                        name=item["name"],
                        state=item["state"],
                        author=author,
                        expected=expected,
                        tags=tags,
                    )
                )
            except ServiceError as exc:
                raise ServiceError(f"item {i + 1} ({item['name']}): {exc}") from exc
    return created


# --- decisions -----------------------------------------------------------------------------------


def decision_ask(
    *,
    backend: str,
    document: Any,
    state: Any,
    model: str | None = None,
    user: AbstractBaseUser | None = None,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
) -> Outcome:
    """Ask `document` (any form; its questions) about `state` through `backend`. An invalid
    document or state, or a backend that is not configured, sends nothing. Every call that went
    out is recorded, whatever its outcome."""
    chosen = backends.get(backend)
    model = model or chosen.default_model()
    checked = spec.validate(
        {"state": state, "questions": _questions_of(document)}, limits=_limits(), lints=False
    )
    if not checked.valid:
        shown = "; ".join(f"{e.path}: {e.message}" for e in checked.errors[:3])
        return Outcome(
            backend=backend,
            model_asked=model,
            live=False,
            error=backends.DecisionError(422, f"Nothing was sent: {shown}"),
        )
    ask = backends.Ask(questions=checked.document.questions, state=state, model=model)
    outcome = chosen.ask(ask)
    log.info(
        "decision backend=%s status=%s provider_status=%s provider_ms=%s total_ms=%.1f id=%s",
        backend,
        outcome.status,
        outcome.provider_status_code,
        None if outcome.provider_ms is None else round(outcome.provider_ms, 1),
        outcome.total_ms,
        outcome.request_id or "-",
    )
    if outcome.request_body is not None:
        outcome.decision_id = decision_record(
            outcome=outcome, ask=ask, user=user, version=version, sample_state=sample_state
        ).pk
    return outcome


def _questions_of(document: Any) -> Any:
    """The questions map of a document in any form (a bare map is its own)."""
    if isinstance(document, dict) and spec.detect_form(document) is not spec.Form.BARE:
        return document.get("questions")
    return document


@transaction.atomic
def decision_record(
    *,
    outcome: Outcome,
    ask: backends.Ask,
    user: AbstractBaseUser | None,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
) -> Decision:
    """Store one live call: the exact request body sent (never the key) with its canonical hash,
    the raw response, status, models, usage, cost, timing, request id, who and when; and each
    checked answer keyed by (question sha256, state sha256, model)."""
    checked = outcome.checked
    error = outcome.error
    decision = Decision.objects.create(
        backend=outcome.backend,
        model_asked=ask.model,
        model_answered=(checked.model or "")[:200] if checked else "",
        request_text=outcome.request_text,
        request_sha256=spec.sha256_of(outcome.request_body),
        state_sha256=ask.state_sha256,
        questions_sha256=spec.sha256_of(ask.questions_json),
        response_text=outcome.response_text,
        status=outcome.status,
        provider_status_code=outcome.provider_status_code,
        detail=error.detail if error else "",
        provider_detail=(error.provider_detail or "") if error else "",
        usage=checked.usage if checked else None,
        cost=checked.cost if checked else None,
        provider_ms=outcome.provider_ms,
        total_ms=outcome.total_ms,
        request_id=outcome.request_id,
        version=version,
        sample_state=sample_state,
        user=user if user is not None and user.is_authenticated else None,
    )
    if checked:
        DecisionAnswer.objects.bulk_create(
            DecisionAnswer(
                decision=decision,
                question_id=qid,
                question_sha256=ask.questions[qid].sha256,
                state_sha256=decision.state_sha256,
                model=ask.model,
                model_answered=decision.model_answered,
                answer=answer,
            )
            for qid, answer in checked.answers.items()
        )
    return decision


# --- review: submit, approve, request changes, labels ------------------------------------------


def _require(user: AbstractBaseUser, check, what: str) -> None:
    if not check(user):
        raise NotAllowed(f"Only {what} do that.")


class NotAllowed(ServiceError):
    """The person may not take this step."""


def _in_review(version: Version) -> Version:
    locked = (
        Version.objects.select_for_update()
        .select_related("question_set", "author")
        .get(pk=version.pk)
    )
    if locked.status != Version.Status.IN_REVIEW:
        raise ServiceError(
            f"Version {locked.number} of {locked.question_set.slug} is "
            f"{locked.get_status_display()}, not in review: only a submitted version is "
            "approved or sent back."
        )
    return locked


@transaction.atomic
def version_approve(
    *, version: Version, reviewer: AbstractBaseUser, note: str = "", label: str = ""
) -> Version:
    """A reviewer approves a submitted version (never their own, unless single-person teams
    are allowed), and may point a label at it in the same step."""
    _require(reviewer, roles.is_reviewer, "reviewers")
    locked = _in_review(version)
    if locked.author_id == reviewer.pk and not settings.DECISIONS_ALLOW_SELF_APPROVAL:
        raise NotAllowed(
            f"{reviewer.get_username()} wrote version {locked.number}; a second person approves "
            "it (DECISIONS__ALLOW_SELF_APPROVAL=1 allows single-person teams)."
        )
    _require_valid(locked, "version")
    locked.approved_model = settings.DECISIONS_MODEL  # frozen with the version, for its export
    locked.save(update_fields=["approved_model"])
    _move(locked, Version.Status.APPROVED, ReviewEvent.Kind.APPROVED, reviewer, note)
    if label:
        label_move(
            question_set=locked.question_set,
            name=label,
            version=locked,
            actor=reviewer,
            note=f"on approval of version {locked.number}",
        )
    return locked


@transaction.atomic
def version_request_changes(*, version: Version, reviewer: AbstractBaseUser, note: str) -> Version:
    """A reviewer sends a submitted version back with a note; its author continues in a new
    draft from it."""
    _require(reviewer, roles.is_reviewer, "reviewers")
    if not note.strip():
        raise ServiceError("Say what should change: the note is what the author works from.")
    locked = _in_review(version)
    return _move(
        locked,
        Version.Status.CHANGES_REQUESTED,
        ReviewEvent.Kind.CHANGES_REQUESTED,
        reviewer,
        note.strip(),
    )


def version_comment(*, version: Version, actor: AbstractBaseUser, note: str) -> ReviewEvent:
    if not note.strip():
        raise ServiceError("A comment needs words.")
    return ReviewEvent.objects.create(
        version=version, kind=ReviewEvent.Kind.COMMENTED, actor=actor, note=note.strip()
    )


LABEL_NAME = re.compile(rf"\A{Label.NAME_PATTERN}\Z")


@transaction.atomic
def label_move(
    *,
    question_set: QuestionSet,
    name: str,
    version: Version,
    actor: AbstractBaseUser,
    note: str = "",
) -> Label:
    """Point a label at an approved version of the set; every move is logged. Rollback is a
    move back."""
    _require(actor, roles.is_reviewer, "reviewers")
    if not LABEL_NAME.match(name or ""):
        raise ServiceError(f"A label name is 1 to 36 of a-z, 0-9, _ . - (got {name!r}).")
    if version.question_set_id != question_set.pk:
        raise ServiceError("A label points at a version of its own set.")
    if version.status != Version.Status.APPROVED:
        raise ServiceError(
            f"Version {version.number} is {version.get_status_display()}; labels point at "
            "approved versions only."
        )
    _lock_set(question_set)
    label = Label.objects.filter(question_set=question_set, name=name).first()
    previous = label.version if label else None
    if previous == version:
        return label
    if label is None:
        label = Label.objects.create(question_set=question_set, name=name, version=version)
    else:
        label.version = version
        label.save(update_fields=["version", "updated_at"])
    LabelMove.objects.create(
        question_set=question_set,
        name=name,
        from_version=previous,
        to_version=version,
        actor=actor,
        note=note,
    )
    return label


# --- API tokens ---------------------------------------------------------------------------------


def api_token_create(*, name: str, user: AbstractBaseUser | None = None) -> tuple[APIToken, str]:
    """A new token: returns the record and the token itself, which is never stored."""
    name = (name or "").strip()
    if not name:
        raise ServiceError("A token needs a name (who or what uses it).")
    raw = f"dct_{secrets.token_urlsafe(32)}"
    token = APIToken.objects.create(
        name=name[:100],
        prefix=raw[:10],
        token_sha256=hashlib.sha256(raw.encode()).hexdigest(),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    return token, raw


def api_token_revoke(*, token: APIToken) -> APIToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_authenticate(raw: str) -> APIToken | None:
    """The active token a bearer string names, with its last use noted; None otherwise."""
    if not raw:
        return None
    digest = hashlib.sha256(raw.encode()).hexdigest()
    token = APIToken.objects.filter(token_sha256=digest, revoked_at__isnull=True).first()
    if token is not None:
        APIToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


# --- batch runs ---------------------------------------------------------------------------------


def batch_create(
    *,
    version: Version,
    backend: str,
    user: AbstractBaseUser | None,
    concurrency: int = 4,
    tag: str = "",
    threshold: float = 0.5,
    model: str | None = None,
    max_attempts: int | None = None,
    enqueue: bool = True,
) -> BatchRun:
    """A run of `version` over the set's sample states (those tagged `tag`, if given), each at
    its current revision. Enqueued for a worker after the commit unless `enqueue` is off."""
    chosen = backends.get(backend)
    if chosen.live and not chosen.configured():
        raise ServiceError(chosen.missing_configuration())
    if not 1 <= concurrency <= 64:
        raise ServiceError(f"Concurrency is 1 to 64, not {concurrency}.")
    if not 0 < threshold < 1:
        raise ServiceError(f"The noul threshold lies strictly between 0 and 1, not {threshold}.")
    result = spec.validate(version.document, limits=_limits(), lints=False)
    if not result.valid:
        raise InvalidContent("version", result.errors)
    states = list(version.question_set.sample_states.all())
    if tag:
        states = [s for s in states if tag in s.tags]
    if not states:
        raise ServiceError(
            f"{version.question_set.slug} has no sample states"
            + (f" tagged {tag}" if tag else "")
            + " to run."
        )
    with transaction.atomic():
        run = BatchRun.objects.create(
            question_set=version.question_set,
            version=version,
            backend=backend,
            model=model or chosen.default_model(),
            concurrency=concurrency,
            max_attempts=max_attempts or settings.DECISIONS_BATCH_ATTEMPTS,
            threshold=threshold,
            tag=tag,
            created_by=user if user is not None and user.is_authenticated else None,
        )
        current = {s.pk: s.revision for s in states}
        revisions = {
            r.sample_state_id: r
            for r in SampleStateRevision.objects.filter(sample_state__in=states)
            if r.revision == current[r.sample_state_id]
        }
        BatchItem.objects.bulk_create(
            BatchItem(run=run, sample_state=revisions[s.pk]) for s in states
        )
        if enqueue:
            from questions.tasks import batch_run_task

            transaction.on_commit(lambda: batch_run_task.enqueue(run.pk))
    return run


def batch_cancel(*, run: BatchRun) -> BatchRun:
    """Ask the run to stop: no new state is asked; calls in flight finish and are kept."""
    if not run.finished:
        BatchRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        if run.status == BatchRun.Status.QUEUED:
            BatchRun.objects.filter(pk=run.pk).update(
                status=BatchRun.Status.CANCELLED, finished_at=timezone.now()
            )
            run.items.filter(status=BatchItem.Status.PENDING).update(
                status=BatchItem.Status.CANCELLED
            )
        run.refresh_from_db()
    return run
