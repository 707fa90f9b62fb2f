"""A set's held-out split as the pages, the commands and a proof read it: its counts, the side
of each state listed, and the held-out states a proof asks about (`questions.core.holdout`
decides the sides)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Q

from questions.core import holdout, metrics, spec
from questions.models import QuestionSet, SampleState, SampleStateRevision

UNLABELLED = Q(expected={}) | Q(expected__isnull=True)


def holdout_split(question_set: QuestionSet) -> holdout.Split:
    """The set's split in numbers: two queries of ids, however many states it has."""
    states = question_set.sample_states.values_list("pk", flat=True)
    labelled = question_set.sample_states.exclude(UNLABELLED).values_list("pk", flat=True)
    return holdout.split(question_set.pk, question_set.holdout_share, states, labelled)


def holdout_mark(question_set: QuestionSet, states: Iterable[SampleState]) -> None:
    """Give each listed state its side: `held_out`, and `side` in words (`holdout.HELD_OUT`
    or `holdout.TRAINING`)."""
    for state in states:
        state.held_out = holdout.held_out(question_set.pk, state.pk, question_set.holdout_share)
        state.side = holdout.HELD_OUT if state.held_out else holdout.TRAINING


def holdout_ids(question_set: QuestionSet, *, held_out: bool = True) -> list[int]:
    """The ids of the set's held-out states (or, `held_out` off, its training states)."""
    share = question_set.holdout_share
    return [
        pk
        for pk in question_set.sample_states.values_list("pk", flat=True)
        if holdout.held_out(question_set.pk, pk, share) is held_out
    ]


def fits_any(expected: Mapping | None, questions: Mapping[str, spec.Question]) -> bool:
    """Whether `expected` holds an answer that fits one of `questions` (by its type)."""
    return any(
        metrics.expected_fits(q.type, (expected or {}).get(qid))
        for qid, q in questions.items()
        if qid in (expected or {})
    )


@dataclass(frozen=True)
class Judged:
    """A held-out state a proof asks about: the state and the revision its answers are asked
    and recorded on."""

    state: SampleState
    revision: SampleStateRevision


def held_out_labelled(
    question_set: QuestionSet, questions: Mapping[str, spec.Question]
) -> list[Judged]:
    """The held-out states that expect an answer of one of `questions`, by name, each with its
    current revision (three queries). Never a training state: a proof judges a wording only on
    states nobody drafted it from."""
    share = question_set.holdout_share
    labelled = question_set.sample_states.exclude(UNLABELLED)
    ids = [
        pk
        for pk in labelled.values_list("pk", flat=True)
        if holdout.held_out(question_set.pk, pk, share)
    ]  # only the held-out states' contents are read
    states = [
        s for s in labelled.filter(pk__in=ids).order_by("name") if fits_any(s.expected, questions)
    ]
    current = {s.pk: s.revision for s in states}
    revisions = {
        r.sample_state_id: r
        for r in SampleStateRevision.objects.filter(sample_state__in=states)
        if r.revision == current[r.sample_state_id]
    }
    return [Judged(s, revisions[s.pk]) for s in states if s.pk in revisions]
