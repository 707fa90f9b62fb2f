"""Suggestions: rewordings of one question, drafted through the `llm` wire from the *training*
states a run of the version answered wrong and the attribution evidence of those answers,
each checked by the contract and the lints, then proven on the *held-out* states
(`questions.services.proofs`): the version's words and each candidate's, paired.

Every rule of a suggestion is here, for the command line and the editor alike:

- **evidence** — the failing states are the run's, on the training side of the set's split
  (`questions.core.holdout`) only: a held-out state is never shown to the drafter. The first
  `ATTRIBUTED` of them are attributed (the question's parts left out one at a time,
  `questions.core.attribution`); the drafter is told what each expected, what it got and
  which words moved it there. No state is recorded with the suggestion, only names;
- **limits** — the plan says its calls (attribution, one drafting call, the proofs) and their
  cost where the backends price them before anything is asked, and a plan above `max_calls`
  is refused; a drafting answer is bounded in bytes, shape and text (`rewording`);
- **who** — asking is for authors and reviewers; applying a candidate makes a draft, which is
  an author's. Nothing changes until a candidate is applied: then a new draft holds it, with
  where it came from on the draft's record (`suggestion_apply`).

The plan is `suggestion_plans`'; the work itself (`suggestion_execute`, in `suggestion_work`)
runs as a task (`suggestion_task`), or in the foreground at the command line. This module is
what the views and the command line call.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from questions import roles
from questions.core import rewording
from questions.models import ReviewEvent, Suggestion, Version
from questions.services import budget
from questions.services.audit import audit_record
from questions.services.batches import RUNNERS_ONLY
from questions.services.budget import budget_reserve
from questions.services.errors import Conflict, Invalid, NotFound, require
from questions.services.suggestion_plans import (
    DEFAULT_MAX_CALLS,
    SuggestPlan,
    suggestion_plan,
)
from questions.services.suggestion_work import suggestion_execute, suggestion_task
from questions.services.versions import (
    WRITERS_ONLY,
    DraftExists,
    document_text,
    move,
    open_draft,
    require_valid,
    version_create,
)


def suggestion_start(*, plan: SuggestPlan, user: Any, enqueue: bool = True) -> Suggestion:
    """Record the planned suggestion and queue it for a worker (after the commit); refused
    first (`budget.OverBudget`) when its calls would pass the team's daily budget: its calls
    count as in flight until it ends."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=plan.version.question_set)
    with transaction.atomic():
        if budget.calls_through(plan.backend):
            budget_reserve(team=plan.version.question_set, calls=plan.calls, what="This suggestion")
        return _started(plan, user, enqueue)


def _started(plan: SuggestPlan, user: Any, enqueue: bool) -> Suggestion:
    suggestion = Suggestion.objects.create(
        question_set=plan.version.question_set,
        version=plan.version,
        version_sha256=plan.version.sha256,
        question=plan.qid,
        run=plan.run,
        backend=plan.backend,
        model=plan.model,
        draft_model=plan.draft_model,
        candidates_wanted=plan.candidates,
        shuffles=plan.shuffles,
        max_calls=plan.calls,
        calls_planned=plan.calls,
        plan_text=document_text(plan.as_json()),
        stage="queued",
        created_by=user if getattr(user, "pk", None) else None,
    )
    audit_record(
        action="run.started",
        actor=user,
        obj=suggestion,
        question_set=plan.version.question_set,
        detail={"kind": "suggestion", "question": plan.qid, "calls": plan.calls},
    )
    if enqueue:
        pk = suggestion.pk
        transaction.on_commit(lambda: suggestion_task.enqueue(pk))
    return suggestion


def suggestion_cancel(*, suggestion: Suggestion, user: Any) -> Suggestion:
    """Ask a suggestion to stop after the call it is making; what is proven stays."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=suggestion.version.question_set)
    if not suggestion.finished:
        audit_record(
            action="run.cancelled",
            actor=user,
            obj=suggestion,
            question_set=suggestion.version.question_set,
        )
    if suggestion.status == Suggestion.Status.QUEUED:
        Suggestion.objects.filter(pk=suggestion.pk, status=Suggestion.Status.QUEUED).update(
            status=Suggestion.Status.CANCELLED,
            cancel_requested=True,
            stage="cancelled before it started",
            finished_at=timezone.now(),
        )
    elif not suggestion.finished:
        Suggestion.objects.filter(pk=suggestion.pk).update(cancel_requested=True)
    suggestion.refresh_from_db()
    return suggestion


# --- applying a candidate ----------------------------------------------------------------------


def provenance(suggestion: Suggestion, candidate: dict[str, Any]) -> str:
    """Where a draft made from `candidate` came from and what proved it, in one sentence."""
    return rewording.candidate_provenance(
        run=suggestion.run_id or suggestion.plan.get("run"),
        suggestion=suggestion.pk,
        candidate=candidate,
    )


@transaction.atomic
def suggestion_apply(*, suggestion: Suggestion, number: int, author: Any) -> Version:
    """A new draft holding candidate `number` of `suggestion` in place of its question, with
    where it came from on its record. From a version that is the set's open draft, that draft
    is kept as it is (the words the candidate was proven against) and the new draft continues
    from it; from any other version the set must have no open draft (`DraftExists`)."""
    require(author, roles.may_write, WRITERS_ONLY, on=suggestion.version.question_set)
    suggestion = Suggestion.objects.select_for_update().get(pk=suggestion.pk)
    candidate = suggestion.candidate(number)
    if candidate is None:
        raise NotFound(f"Suggestion {suggestion.pk} has no candidate {number}.")
    if candidate.get("status") not in rewording.USABLE:
        raise Invalid(
            f"Candidate {number} cannot be used: {candidate.get('reason') or 'not checked'}.",
            code="candidate_unusable",
        )
    if suggestion.applied_version_id is not None:
        raise Conflict(
            f"Suggestion {suggestion.pk} made v{suggestion.applied_version.number} already "
            f"(candidate {suggestion.applied_candidate}); continue there.",
            code="applied",
        )
    version = Version.objects.select_for_update().get(pk=suggestion.version_id)
    if version.sha256 != suggestion.version_sha256:
        raise Conflict(
            f"v{version.number} has changed since the candidates were proven against it: "
            "suggest again.",
            code="version_changed",
        )
    draft = open_draft(version.question_set)
    if draft is not None and draft.pk != version.pk:
        raise DraftExists(draft)
    document = rewording.with_question(version.document, suggestion.question, candidate["question"])
    if version.is_draft:
        require_valid(version, "draft")
        move(version, Version.Status.KEPT, ReviewEvent.Kind.KEPT, author, "before a suggestion")
    made = version_create(
        question_set=version.question_set,
        document=document,
        author=author,
        parent=version,
        note=provenance(suggestion, candidate),
        advice=version.advice,
    )
    suggestion.applied_version = made
    suggestion.applied_candidate = number
    suggestion.applied_by = author if getattr(author, "pk", None) else None
    suggestion.applied_at = timezone.now()
    suggestion.save(
        update_fields=["applied_version", "applied_candidate", "applied_by", "applied_at"]
    )
    return made


__all__ = [
    "DEFAULT_MAX_CALLS",
    "SuggestPlan",
    "provenance",
    "suggestion_apply",
    "suggestion_cancel",
    "suggestion_execute",
    "suggestion_plan",
    "suggestion_start",
    "suggestion_task",
]
