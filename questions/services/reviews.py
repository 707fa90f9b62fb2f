"""Review and labels: approve, request changes, comment, and move a label (rollback included).

Four eyes: nobody approves a version they wrote or edited (unless single-person teams are
allowed with DECISIONS__ALLOW_SELF_APPROVAL). An approval and every label move tell the set's
webhooks (`services.webhooks`), once the change commits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from questions import roles
from questions.core import stats
from questions.dev import standin
from questions.engine import webhooks
from questions.models import BatchRun, Decision, Label, LabelMove, QuestionSet, ReviewEvent, Version
from questions.selectors import review, runs
from questions.services.audit import audit_record
from questions.services.errors import TEXT_LIMIT, Conflict, Invalid, NotAllowed, require, storable
from questions.services.versions import _lock_set, move, require_valid
from questions.services.webhooks import webhook_event

REVIEWERS_ONLY = "Only reviewers do that."
LABEL_NAME = re.compile(rf"\A{Label.NAME_PATTERN}\Z")


def _in_review(version: Version) -> Version:
    locked = (
        Version.objects.select_for_update()
        .select_related("question_set", "author")
        .get(pk=version.pk)
    )
    if locked.status != Version.Status.IN_REVIEW:
        raise Conflict(
            f"Version {locked.number} of {locked.question_set.slug} is "
            f"{locked.get_status_display()}, not in review: only a submitted version is "
            "approved or sent back.",
            code="not_in_review",
        )
    return locked


def wrote(user: Any, version: Version) -> bool:
    """Whether `user` created `version` or saved any revision of it."""
    if version.author_id == user.pk:
        return True
    return version.events.filter(
        kind__in=(ReviewEvent.Kind.CREATED, ReviewEvent.Kind.EDITED), actor_id=user.pk
    ).exists()


class WeakEvidence(Invalid):
    """The version's evidence is weak (`weak_evidence`): it is approved only with an explicit
    confirmation. `reason` completes "This version …"; each surface says how to confirm."""

    code = "weak_evidence"

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(
            f"This version {reason}: approving it needs an explicit confirmation that the "
            "evidence was looked at (and the note should say why)."
        )


def weak_evidence(version: Version, evidence: dict | None = None) -> str:
    """Why approving `version` needs an explicit confirmation, or "": it has no finished run;
    or, on the question–state pairs both its latest run and the baseline's latest run checked
    (the overall paired verdict's, `runs.paired_verdicts`), it passes fewer than the
    baseline's, or no pair was checked by both. `evidence` is what `review.review_evidence`
    gave against the baseline, when the caller has it already."""
    if evidence is None:
        baseline, _name = review.review_baseline(version)
        evidence = {
            "this": review.run_evidence(runs.latest_run(version)),
            "base": review.run_evidence(runs.latest_run(baseline)),
        }
    this, base = evidence["this"], evidence["base"]
    if this is None:
        return "has no finished batch run over the sample states"
    if base is None:
        return ""
    base_run = base["run_obj"]
    paired = runs.paired_verdicts(base_run, this["run_obj"])["overall"]
    if paired.n == 0:
        return (
            f"shares no checked {paired.unit} with the baseline's run {base_run.pk}: nothing shows "
            "it does as well"
        )
    if paired.after < paired.before:
        both = f"the {stats.plural(paired.n, paired.unit)} both runs checked"
        return (
            f"passes {paired.passed_after} of {both} ({paired.after:.0%}), fewer than the "
            f"baseline's run {base_run.pk} ({paired.passed_before} of {paired.n}, "
            f"{paired.before:.0%})"
        )
    return ""


@transaction.atomic
def version_approve(
    *,
    version: Version,
    reviewer: Any,
    note: str = "",
    label: str = "",
    confirm_weak_evidence: bool = False,
) -> Version:
    """A reviewer approves a submitted version — never one they wrote or edited, unless
    single-person teams are allowed — and may point a label at it in the same step. A version
    with weak evidence (`weak_evidence`) is refused with `WeakEvidence` unless the reviewer
    confirms it (`confirm_weak_evidence`); the confirmation and its reason open the note."""
    require(reviewer, roles.may_review, REVIEWERS_ONLY, on=version.question_set)
    storable(note, "The note", TEXT_LIMIT)
    locked = _in_review(version)
    if not settings.DECISIONS_ALLOW_SELF_APPROVAL and wrote(reviewer, locked):
        raise NotAllowed(
            f"{reviewer.get_username()} wrote or edited version {locked.number}; a second "
            "person approves it (DECISIONS__ALLOW_SELF_APPROVAL=1 allows single-person teams)."
        )
    require_valid(locked, "version")
    weak = weak_evidence(locked)
    if weak and not confirm_weak_evidence:
        raise WeakEvidence(weak)
    if weak:
        note = f"Approved although this version {weak} (confirmed). {note}".strip()
    # frozen with the version: the model production asks (the export's model), and who
    # answered the evidence it was approved on (the export's answered_by)
    run = runs.latest_run(locked)
    locked.approved_model = settings.DECISIONS_MODEL
    locked.approved_evidence_run = run
    locked.approved_model_answered = pinned(answered_models(run))
    locked.save(
        update_fields=["approved_model", "approved_evidence_run", "approved_model_answered"]
    )
    move(locked, Version.Status.APPROVED, ReviewEvent.Kind.APPROVED, reviewer, note)
    webhook_event(webhooks.APPROVED, version=locked, label=label or None)
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
def version_request_changes(*, version: Version, reviewer: Any, note: str) -> Version:
    """A reviewer sends a submitted version back with a note; its author continues in a new
    draft from it."""
    require(reviewer, roles.may_review, REVIEWERS_ONLY, on=version.question_set)
    if not note.strip():
        raise Invalid("Say what should change: the note is what the author works from.")
    storable(note, "The note", TEXT_LIMIT)
    locked = _in_review(version)
    return move(
        locked,
        Version.Status.CHANGES_REQUESTED,
        ReviewEvent.Kind.CHANGES_REQUESTED,
        reviewer,
        note.strip(),
    )


def version_comment(*, version: Version, actor: Any, note: str) -> ReviewEvent:
    """A note on a version's record, by an author or a reviewer."""
    require(
        actor,
        roles.may_comment,
        "Only authors and reviewers comment on a review.",
        on=version.question_set,
    )
    if not note.strip():
        raise Invalid("A comment needs words.")
    storable(note, "The comment", TEXT_LIMIT)
    event = ReviewEvent.objects.create(
        version=version, kind=ReviewEvent.Kind.COMMENTED, actor=actor, note=note.strip()
    )
    audit_record(
        action="version.commented", actor=actor, obj=version, question_set=version.question_set
    )
    return event


@transaction.atomic
def label_move(
    *,
    question_set: QuestionSet,
    name: str,
    version: Version,
    actor: Any,
    note: str = "",
) -> Label:
    """Point a label at an approved version of the set; every move is logged. Rollback is a
    move back."""
    require(actor, roles.may_review, REVIEWERS_ONLY, on=question_set)
    if not LABEL_NAME.match(name or ""):
        raise Invalid(f"A label name is 1 to 36 of a-z, 0-9, _ . - (got {name!r}).")
    storable(note, "The note", TEXT_LIMIT)
    if version.question_set_id != question_set.pk:
        raise Invalid("A label points at a version of its own set.")
    if version.status != Version.Status.APPROVED:
        raise Conflict(
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
    audit_record(
        action="label.moved",
        actor=actor,
        obj=label,
        question_set=question_set,
        detail={
            "label": name,
            "from": previous.number if previous else None,
            "to": version.number,
        },
    )
    webhook_event(
        webhooks.LABEL_MOVED,
        version=version,
        label=name,
        previous=previous.number if previous else None,
    )
    return label


# --- pinning: who answered the evidence, against what production asks ---------------------------

STAND_IN_MODELS = frozenset({standin.MODEL, standin.CHAT_MODEL})


def answered_models(run: BatchRun | None) -> list[str]:
    """The models that answered a run's calls, as the provider named them (sorted; empty when
    there is no run, it was replayed from recordings, or no provider named its model)."""
    if run is None:
        return []
    return sorted(
        run.items.exclude(decision=None)
        .exclude(decision__model_answered="")
        .values_list("decision__model_answered", flat=True)
        .distinct()
        .order_by()
    )


def pinned(models: list[str]) -> str | list[str] | None:
    """What an export's `answered_by` says: the one model that answered, every one (sorted)
    when several did, None when none is known."""
    if not models:
        return None
    return models[0] if len(models) == 1 else list(models)


@dataclass
class PinCheck:
    """What a review says about the model its evidence was answered by: `asked` and
    `answered` of the evidence run, the model production will ask, and the warnings."""

    production: str
    run: BatchRun | None
    asked: str = ""
    answered: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def resolution(self) -> str:
        """ "jev-latest answered by jev-1.13.0", or the asked model alone when it answered."""
        others = [m for m in self.answered if m != self.asked]
        return f"{self.asked} answered by {', '.join(others)}" if others else self.asked


def pin_check(version: Version, run: BatchRun | None = None, *, find: bool = True) -> PinCheck:
    """Whether the evidence of `version` was answered by the model production will ask: the
    frozen one of an approved version (on the run it was approved on), else DECISIONS__MODEL
    (on `run`, the review's evidence; found as the latest finished plain run when not given
    and `find` is on). "Other" means: the local
    stand-in answered (always a warning: it is not Jev); the run asked another model than
    production asks; several models answered; no model was named; or the latest live call
    asking production's model since the run was answered by a model that did not answer the
    evidence (an alias that has moved on). An alias answered by one concrete model
    (`jev-latest` by `jev-1.13.0`) is not a warning: it is what gets pinned."""
    approved = version.status == Version.Status.APPROVED
    production = (version.approved_model if approved else "") or settings.DECISIONS_MODEL
    if approved:
        run = version.approved_evidence_run
    elif run is None and find:
        run = runs.latest_run(version)
    check = PinCheck(production=production, run=run)
    if run is None:
        return check
    check.asked = run.model
    if approved:
        frozen = version.approved_model_answered
        check.answered = [frozen] if isinstance(frozen, str) else list(frozen or [])
    else:
        check.answered = answered_models(run)
    warn = check.warnings.append
    stand_ins = [m for m in check.answered if m in STAND_IN_MODELS]
    if stand_ins:
        warn(
            f"The evidence (run {run.pk}) was answered by the local stand-in "
            f"({', '.join(stand_ins)}), not by a model behind {production}: its answers say "
            "nothing about production's."
        )
    if run.model != production:
        warn(f"The evidence run {run.pk} asked {run.model}; production asks {production}.")
    if not check.answered:
        warn(
            f"The evidence run {run.pk} recorded no answering model (replayed, or the provider "
            "named none): the export's answered_by is null, and a tool that pins a model has "
            "nothing to pin."
        )
    elif len(check.answered) > 1:
        warn(
            f"The evidence run {run.pk} was answered by {len(check.answered)} models "
            f"({', '.join(check.answered)}): no one model stands behind it."
        )
    later = _latest_answer_to(production, run)
    if later and check.answered and later[0] not in check.answered:
        warn(
            f"The latest call asking {production} ({later[1]:%Y-%m-%d %H:%M}) was answered by "
            f"{later[0]}, not by {', '.join(check.answered)} that answered the evidence: "
            f"{production} now resolves elsewhere."
        )
    return check


def _latest_answer_to(model: str, run: BatchRun) -> tuple[str, Any] | None:
    """(model answered, when) of the latest live call asking `model` after `run`'s calls,
    through the run's backend; one range read on the newest decisions."""
    newest = (
        run.items.exclude(decision=None)
        .order_by("-decision_id")
        .values_list("decision_id", flat=True)
    )
    after = newest.first()
    if after is None:
        return None
    return (
        Decision.objects.filter(pk__gt=after, model_asked=model, backend=run.backend, status=200)
        .exclude(model_answered="")
        .order_by("-pk")
        .values_list("model_answered", "created_at")
        .first()
    )
