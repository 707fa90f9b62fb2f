"""Labels per labeller: give one (the labelling page and `questions state-label`), undo your
last, settle or mark a dispute ambiguous (a reviewer), hold a state for its labeller, and say how
many labels a set's states need. Every rule of these steps is here; the page and the CLI only
translate.

The settled answers stay in `SampleState.expected`, written with the state's history (a new
revision) whenever what the labels settle changes: the pass rates, the scorecard, the gate and
the exports read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import task

from questions import roles
from questions.core import labelling, settling
from questions.models import (
    LabelQueue,
    LabelQueueEntry,
    LabelReservation,
    LabelSettlement,
    QuestionSet,
    SampleState,
    StateLabel,
)
from questions.selectors.labels import labelling_version, states_to_label
from questions.selectors.settled import settled_counts_moved
from questions.services.audit import audit_record
from questions.services.errors import Conflict, Invalid, NotAllowed, require

#: how long a state is held for the labeller it was handed to
RESERVATION_MINUTES = 5
LABELLERS_ONLY = "Only authors label sample states."
REVIEWERS_ONLY = "Only reviewers settle disputed labels."
SETTINGS_ONLY = "Only reviewers say how many labels a state needs."


@dataclass(frozen=True)
class LabelSaved:
    """What a label did: the label, the state as it is now, and the question's outcome."""

    label: StateLabel
    sample: SampleState
    outcome: settling.Outcome


def question_of(question_set: QuestionSet, question_id: str, number: int | None = None):
    """The labelling version's question `question_id` (a `labelling.Question`), or Invalid."""
    version = labelling_version(question_set, number)
    if version is None:
        raise Invalid(f"{question_set.slug} has no version to label for.")
    for question in labelling.questions_of(version.document):
        if question.id == question_id:
            return question, version
    raise Invalid(
        f"v{version.number} has no question {str(question_id)[:32]!r} that takes an expected "
        "answer."
    )


def _answer(question: labelling.Question, raw: Any, version_number: int) -> Any:
    """`raw` (the form's text, or a stored value) as an expected answer of `question`."""
    answer = question.value(raw) if isinstance(raw, str) else question.stored(raw)
    if answer is None:
        raise Invalid(f"{question.refusal(raw, version_number)}.")
    return answer


def current_labels(sample: SampleState, question_id: str) -> list[StateLabel]:
    return list(
        sample.labels.filter(question_id=question_id, current=True).select_related("labeller")
    )


def outcome_of(sample: SampleState, question_id: str) -> settling.Outcome:
    """What the labels and any settlement of `sample`'s question decide now."""
    settlement = sample.settlements.filter(question_id=question_id).first()
    return settling.settle(
        [
            settling.Given(x.labeller_id, x.answer, (x.created_at, x.pk))
            for x in current_labels(sample, question_id)
        ],
        sample.question_set.labels_needed,
        (settlement.outcome, settlement.answer) if settlement else None,
    )


def _apply(sample: SampleState, question_id: str, author: Any) -> settling.Outcome:
    """Write what the question now settles into the state's expected answers (a new revision
    when it changes); an open, disputed or ambiguous question has none."""
    outcome = outcome_of(sample, question_id)
    expected = dict(sample.expected)
    if outcome.settled:
        expected[question_id] = outcome.answer
    else:
        expected.pop(question_id, None)
    if expected != sample.expected:
        _save_expected(sample, expected, author)
    return outcome


def _save_expected(sample: SampleState, expected: dict, author: Any) -> None:
    """`sample` (locked by the caller) with these settled answers: a new revision, history
    kept, by whoever's label or settlement changed them."""
    settled_counts_moved(sample.question_set, sample.expected, expected)
    sample.expected = expected
    sample.revision += 1
    sample.save(update_fields=["expected", "revision", "updated_at"])
    sample.revision_record(author).save()


def _live_hold(sample: SampleState, labeller: Any) -> LabelReservation | None:
    """Another labeller's hold on `sample` that has not run out."""
    return (
        sample.reservations.filter(until__gt=timezone.now())
        .exclude(labeller=labeller)
        .select_related("labeller")
        .first()
    )


@transaction.atomic
def state_label(
    *,
    sample: SampleState,
    question_id: str,
    answer: Any,
    labeller: Any,
    version: int | None = None,
) -> LabelSaved:
    """Give `labeller`'s answer to one question of `sample` (replacing their own earlier one).
    Refused when the question is settled by a reviewer, when it has every label it needs from
    others, or when its last needed label is held for another labeller."""
    require(labeller, roles.may_write, LABELLERS_ONLY, on=sample.question_set)
    if labeller is roles.OPERATOR:
        raise Invalid("A label is a person's: name the labeller (--user).")
    sample = (
        SampleState.objects.select_for_update().select_related("question_set").get(pk=sample.pk)
    )
    question, found = question_of(sample.question_set, question_id, version)
    value = _answer(question, answer, found.number)
    needed = sample.question_set.labels_needed
    if sample.settlements.filter(question_id=question.id).exists():
        raise Conflict(
            f"{sample.name}: `{question.id}` was settled by a reviewer; labels no longer change it."
        )
    labels = current_labels(sample, question.id)
    mine = next((x for x in labels if x.labeller_id == labeller.pk), None)
    others = [x for x in labels if x.labeller_id != labeller.pk]
    if needed > 1 and mine is None:
        if len(others) >= needed:
            raise Conflict(
                f"{sample.name}: `{question.id}` has the {needed} labels it needs already."
            )
        hold = _live_hold(sample, labeller)
        if hold is not None and len(others) == needed - 1:
            raise Conflict(
                f"{sample.name} is held for {hold.labeller.get_username()} until "
                f"{timezone.localtime(hold.until):%H:%M}: its last needed label is theirs."
            )
    if mine is not None and _same(mine.answer, value):
        return LabelSaved(mine, sample, outcome_of(sample, question.id))
    if mine is not None:
        StateLabel.objects.filter(pk=mine.pk).update(current=False)
    label = StateLabel.objects.create(
        sample_state=sample, question_id=question.id, answer=value, labeller=labeller
    )
    # their hold was for this label: the page holds the state again if it shows it next
    LabelReservation.objects.filter(sample_state=sample, labeller=labeller).delete()
    outcome = _apply(sample, question.id, labeller)
    sample.refresh_from_db()
    audit_record(
        action="state.labelled",
        actor=labeller,
        obj=sample,
        question_set=sample.question_set,
        detail={"question": question.id},
    )
    return LabelSaved(label, sample, outcome)


@transaction.atomic
def state_label_undo(*, question_set: QuestionSet, labeller: Any) -> StateLabel | None:
    """Take back `labeller`'s newest label on the set (their answer before it, if they gave
    one, is theirs again): the undo a reload keeps. None when they have nothing to undo."""
    require(labeller, roles.may_write, LABELLERS_ONLY, on=question_set)
    newest = (
        StateLabel.objects.select_for_update()
        .filter(sample_state__question_set=question_set, labeller=labeller, current=True)
        .order_by("-created_at", "-pk")
        .first()
    )
    if newest is None:
        return None
    sample = newest.sample_state
    if sample.settlements.filter(question_id=newest.question_id).exists():
        raise Conflict(
            f"{sample.name}: `{newest.question_id}` was settled by a reviewer; its labels stay."
        )
    StateLabel.objects.filter(pk=newest.pk).update(current=False, undone_at=timezone.now())
    before = (
        StateLabel.objects.filter(
            sample_state=sample,
            question_id=newest.question_id,
            labeller=labeller,
            undone_at=None,
            created_at__lte=newest.created_at,
        )
        .exclude(pk=newest.pk)
        .order_by("-created_at", "-pk")
        .first()
    )
    if before is not None:
        StateLabel.objects.filter(pk=before.pk).update(current=True)
    _apply(sample, newest.question_id, labeller)
    newest.refresh_from_db()
    audit_record(
        action="state.label_undone",
        actor=labeller,
        obj=sample,
        question_set=question_set,
        detail={"question": newest.question_id},
    )
    return newest


def _may_settle(sample: SampleState, question_id: str, reviewer: Any) -> None:
    """A reviewer settles; never one of the state's labellers while a reviewer who is not one
    exists."""
    require(reviewer, roles.may_review, REVIEWERS_ONLY, on=sample.question_set)
    if reviewer is roles.OPERATOR:
        raise Invalid("A settlement is a reviewer's: name them (--user).")
    labellers = set(
        sample.labels.filter(question_id=question_id, current=True).values_list(
            "labeller_id", flat=True
        )
    )
    reviewing = [r for r in roles.ROLES if roles.REVIEW in roles.RIGHTS[r]]
    reviewers = get_user_model().objects.filter(
        Q(memberships__team=sample.question_set.team_id, memberships__role__in=reviewing)
        | Q(is_superuser=True),
        is_active=True,
    )
    if reviewer.pk in labellers and reviewers.exclude(pk__in=labellers).exists():
        raise NotAllowed(
            f"You labelled {sample.name}'s `{question_id}`; a reviewer who did not settles it."
        )


@transaction.atomic
def dispute_settle(
    *,
    sample: SampleState,
    question_id: str,
    reviewer: Any,
    answer: Any = None,
    ambiguous: bool = False,
) -> settling.Outcome:
    """Settle a disputed question of `sample` with `answer`, or mark it ambiguous. A reviewer
    may change their settlement; a question that is not disputed is refused."""
    sample = (
        SampleState.objects.select_for_update().select_related("question_set").get(pk=sample.pk)
    )
    question, found = question_of(sample.question_set, question_id)
    _may_settle(sample, question.id, reviewer)
    existing = sample.settlements.filter(question_id=question.id).first()
    if existing is None and outcome_of(sample, question.id).status != settling.DISPUTED:
        raise Conflict(f"{sample.name}: `{question.id}` is not disputed; nothing to settle.")
    value = None if ambiguous else _answer(question, answer, found.number)
    LabelSettlement.objects.update_or_create(
        sample_state=sample,
        question_id=question.id,
        defaults={
            "outcome": settling.MARKED_AMBIGUOUS if ambiguous else settling.BY_REVIEWER,
            "answer": value,
            "reviewer": reviewer,
        },
    )
    audit_record(
        action="dispute.settled",
        actor=reviewer,
        obj=sample,
        question_set=sample.question_set,
        detail={"question": question.id, "ambiguous": ambiguous},
    )
    return _apply(sample, question.id, reviewer)


def reserve(*, sample: SampleState, labeller: Any) -> LabelReservation | None:
    """Hold `sample` for `labeller` for `RESERVATION_MINUTES` (their hold on another state of
    the set ends). None when labels are not shared out (one label needed) or it is another's.
    Only a labeller (an author) holds a state."""
    require(labeller, roles.may_write, LABELLERS_ONLY, on=sample.question_set)
    if sample.question_set.labels_needed <= 1 or not getattr(labeller, "pk", None):
        return None
    with transaction.atomic():
        if _live_hold(sample, labeller) is not None:
            return None
        LabelReservation.objects.filter(
            labeller=labeller, sample_state__question_set=sample.question_set
        ).exclude(sample_state=sample).delete()
        hold, _ = LabelReservation.objects.update_or_create(
            sample_state=sample,
            labeller=labeller,
            defaults={"until": timezone.now() + timedelta(minutes=RESERVATION_MINUTES)},
        )
    return hold


@transaction.atomic
def labelling_configure(
    *,
    question_set: QuestionSet,
    user: Any,
    needed: int | None = None,
    show_model: bool | None = None,
) -> QuestionSet:
    """How many labels a state needs and whether labellers see the model's answer first.
    Answers already settled stay settled; a question with fewer labels than the new number
    asks for more (the queue offers it) and settles again when its next label comes."""
    require(user, roles.may_review, SETTINGS_ONLY, on=question_set)
    fields = []
    if needed is not None:
        refusal = settling.needed_refusal(needed)
        if refusal:
            raise Invalid(refusal)
        question_set.labels_needed = needed
        fields.append("labels_needed")
    if show_model is not None:
        question_set.labels_show_model = bool(show_model)
        fields.append("labels_show_model")
    if fields:
        question_set.save(update_fields=[*fields, "updated_at"])
        audit_record(
            action="set.settings_changed",
            actor=user,
            obj=question_set,
            question_set=question_set,
            detail={"labels_needed": needed, "labels_show_model": show_model},
        )
    return question_set


def direct_labels(sample: SampleState | None, before: dict, after: dict, author: Any) -> dict:
    """The state form's and an import's expected answers are their author's labels: each one
    added or changed becomes the author's label, one removed takes every current label of that
    question back (the author cleared it). Returns the expected answers to store: `after` with
    one label needed (the newest label settles), else what the labels now settle. `sample` is
    None for a state not saved yet (`import_labels` records its labels once it is).

    With two or more labels needed the labelling page's rules hold here too: a question a
    reviewer settled, or one with every label it needs from others, is refused (`Conflict`),
    and clearing an answer takes back the author's own label only."""
    changed = [q for q, a in after.items() if q not in before or not _same(before[q], a)]
    removed = [q for q in before if q not in after]
    if sample is None or not getattr(author, "pk", None) or not (changed or removed):
        return after
    needed = sample.question_set.labels_needed
    if needed > 1:
        _refuse_past_the_rules(sample, changed + removed, author, needed)
    taken_back = StateLabel.objects.filter(
        sample_state=sample, question_id__in=removed, current=True
    )
    if needed > 1:
        taken_back = taken_back.filter(labeller=author)
    taken_back.update(current=False)
    StateLabel.objects.filter(
        sample_state=sample, question_id__in=changed, labeller=author, current=True
    ).update(current=False)
    StateLabel.objects.bulk_create(
        [
            StateLabel(sample_state=sample, question_id=q, answer=after[q], labeller=author)
            for q in changed
        ]
    )
    if sample.question_set.labels_needed <= 1:
        return after
    settled = dict(after)
    for qid in changed:
        outcome = outcome_of(sample, qid)
        if outcome.settled:
            settled[qid] = outcome.answer
        else:
            settled.pop(qid, None)
    return settled


def _refuse_past_the_rules(sample: SampleState, qids: list[str], author: Any, needed: int) -> None:
    """`Conflict` for the first of `qids` the author may not label on `sample` as the
    labelling page would refuse it: settled by a reviewer, or every needed label given by
    others (the author has none of their own)."""
    settled = set(
        sample.settlements.filter(question_id__in=qids).values_list("question_id", flat=True)
    )
    for qid in qids:
        if qid in settled:
            raise Conflict(
                f"{sample.name}: `{qid}` was settled by a reviewer; labels no longer change it."
            )
        labels = current_labels(sample, qid)
        if all(x.labeller_id != author.pk for x in labels) and len(labels) >= needed:
            raise Conflict(f"{sample.name}: `{qid}` has the {needed} labels it needs already.")


def import_labels(samples: list[SampleState], author: Any) -> None:
    """The labels of states an import has just written (their expected answers, the
    importer's); with two or more labels needed, one label settles nothing yet."""
    if not getattr(author, "pk", None) or not samples:
        return
    StateLabel.objects.bulk_create(
        [
            StateLabel(sample_state=s, question_id=q, answer=a, labeller=author)
            for s in samples
            for q, a in s.expected.items()
        ]
    )
    if samples[0].question_set.labels_needed > 1:
        SampleState.objects.filter(pk__in=[s.pk for s in samples]).update(expected={})
        for s in samples:
            s.expected = {}


def store_label_queue(question_set: QuestionSet) -> LabelQueue | None:
    """Rank the set's states worth labelling (`states_to_label`, every state) for the version
    a state is labelled for, and keep the ranking (`LabelQueue`): once a run of the set
    finishes, as the answers it ranks by change only then. None when the set has no version."""
    version = labelling_version(question_set)
    if version is None:
        return None
    candidates = states_to_label(question_set, version, limit=None)
    pks = dict(question_set.sample_states.values_list("name", "pk"))
    with transaction.atomic():
        LabelQueue.objects.filter(question_set=question_set).delete()
        queue = LabelQueue.objects.create(question_set=question_set, version_number=version.number)
        LabelQueueEntry.objects.bulk_create(
            [
                LabelQueueEntry(
                    queue=queue,
                    sample_state_id=pks[c.name],
                    position=place,
                    questions=c.questions,
                    reasons=c.reasons,
                )
                for place, c in enumerate(candidates)
                if c.name in pks
            ],
            batch_size=500,
        )
    return queue


@task()
def label_queue_task(question_set_id: int) -> None:
    """Rank the set's labelling queue again (`store_label_queue`): queued when a run of the
    set finishes. A set deleted since has none."""
    question_set = QuestionSet.objects.filter(pk=question_set_id).first()
    if question_set is not None:
        store_label_queue(question_set)


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)
