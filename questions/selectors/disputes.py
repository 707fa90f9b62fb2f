"""The disputes page's reads (`/sets/SLUG/disputes/`, `questions disputes`): the questions of a
set's states whose labels disagree, and apart from them those a reviewer has settled or marked
ambiguous, each with its state, the labels side by side (who gave them and when) and the
answers the question offers; and how many ambiguous states each question's pass rate leaves
out (the run report and the scorecard say it beside the rate).

Only the questions of the version states are labelled for (`labels.labelling_version`) are
listed: those are the ones a reviewer can settle. What is disputed is `core.settling`'s rule: a
question whose current labels differ, on a set needing two or more, with no settlement yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, OuterRef

from questions import roles
from questions.core import labelling, settling
from questions.models import (
    BatchItem,
    BatchRun,
    LabelSettlement,
    QuestionSet,
    SampleState,
    StateLabel,
    Version,
)
from questions.selectors.labels import labelling_version

#: how many disputes the page lists (the command line lists them all)
DISPUTES_SHOWN = 100


@dataclass(frozen=True)
class GivenLabel:
    """One labeller's current label of a disputed question: who, the answer, its words, when."""

    labeller: str
    answer: Any
    words: str
    at: datetime


@dataclass(frozen=True)
class Dispute:
    """One question of one state whose labels disagree, or that a reviewer settled: the state,
    the question (its choices as `(form value, words)`), the labels, oldest first, and the
    reviewer's word when there is one."""

    state_id: int
    state_name: str
    content: Any
    question: labelling.Question
    labels: tuple[GivenLabel, ...]
    status: str
    reviewer: str | None = None
    answer: Any = None
    settled_at: datetime | None = None

    @property
    def key(self) -> str:
        """The row's DOM id (`dispute-<state>-<question>`): the row a settlement re-renders."""
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.question.id)
        return f"dispute-{self.state_id}-{safe}"

    @property
    def state_text(self) -> str:
        return json.dumps(self.content, ensure_ascii=False, indent=2)

    @property
    def ambiguous(self) -> bool:
        return self.status == settling.AMBIGUOUS

    @property
    def choices_given(self) -> list[tuple[str, str, list[str]]]:
        """The question's choices, each (form value, words, who gave it): the settle buttons."""
        given: dict[str, list[str]] = {}
        for label in self.labels:
            given.setdefault(form_value(self.question, label.answer), []).append(label.labeller)
        return [(value, text, given.get(value, [])) for value, text in self.question.choices]

    @property
    def answer_words(self) -> str:
        return words(self.question, self.answer) if self.status == settling.SETTLED else ""

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state_name,
            "state_id": self.state_id,
            "content": self.content,
            "question": self.question.id,
            "status": self.status,
            "choices": [value for value, _ in self.question.choices],
            "labels": [
                {"labeller": x.labeller, "answer": x.answer, "at": x.at.isoformat()}
                for x in self.labels
            ],
            "settlement": None
            if self.reviewer is None
            else {
                "reviewer": self.reviewer,
                "ambiguous": self.ambiguous,
                "answer": self.answer,
                "at": self.settled_at.isoformat() if self.settled_at else None,
            },
        }


@dataclass(frozen=True)
class Disputes:
    """A set's disputes: the open ones (the first `DISPUTES_SHOWN` of `disputed_total`, by state
    name and declared question order) and the ones reviewers settled or marked ambiguous."""

    disputed: list[Dispute]
    disputed_total: int
    settled: list[Dispute]
    version_number: int | None
    needed: int

    def as_json(self) -> dict[str, Any]:
        return {
            "needed": self.needed,
            "version": self.version_number,
            "disputed_total": self.disputed_total,
            "disputed": [d.as_json() for d in self.disputed],
            "settled": [d.as_json() for d in self.settled],
        }


def form_value(question: labelling.Question, answer: Any) -> str:
    """An expected answer of `question` as its choice's form value ("2", "true", "billing")."""
    if question.type == "noul":
        return "true" if answer is True else "false" if answer is False else json.dumps(answer)
    return str(answer)


def words(question: labelling.Question, answer: Any) -> str:
    """An expected answer of `question` as the labelling page shows it ("2: now", "billing")."""
    shown = dict(question.choices).get(form_value(question, answer))
    return shown if shown is not None else json.dumps(answer, ensure_ascii=False)


def _questions(question_set: QuestionSet) -> tuple[int | None, dict[str, labelling.Question]]:
    version = labelling_version(question_set)
    if version is None:
        return None, {}
    return version.number, {q.id: q for q in labelling.questions_of(version.document)}


def _disagreeing(question_set: QuestionSet, qids: Iterable[str]):
    """(state id, state name, question id) of every question whose current labels hold two
    answers or more and that no reviewer has settled: the rows that can be disputed."""
    settled = LabelSettlement.objects.filter(
        sample_state=OuterRef("sample_state"), question_id=OuterRef("question_id")
    )
    return (
        StateLabel.objects.filter(
            sample_state__question_set=question_set, current=True, question_id__in=list(qids)
        )
        .order_by()
        .values("sample_state_id", "sample_state__name", "question_id")
        .annotate(answers=Count("answer", distinct=True))
        .filter(answers__gt=1)
        .exclude(Exists(settled))
        .values_list("sample_state_id", "sample_state__name", "question_id")
    )


def _labels_of(pairs: set[tuple[int, str]]) -> dict[tuple[int, str], list[StateLabel]]:
    """The current labels of each (state id, question id), oldest first."""
    found: dict[tuple[int, str], list[StateLabel]] = {pair: [] for pair in pairs}
    rows = (
        StateLabel.objects.filter(
            current=True,
            sample_state_id__in={s for s, _ in pairs},
            question_id__in={q for _, q in pairs},
        )
        .select_related("labeller")
        .order_by("created_at", "pk")
    )
    for label in rows:
        pair = (label.sample_state_id, label.question_id)
        if pair in found:
            found[pair].append(label)
    return found


def _given(question: labelling.Question, labels: list[StateLabel]) -> tuple[GivenLabel, ...]:
    return tuple(
        GivenLabel(x.labeller.get_username(), x.answer, words(question, x.answer), x.created_at)
        for x in labels
    )


def _outcome(labels: list[StateLabel], needed: int) -> settling.Outcome:
    return settling.settle(
        [settling.Given(x.labeller_id, x.answer, (x.created_at, x.pk)) for x in labels], needed
    )


def disputes(question_set: QuestionSet, *, limit: int | None = DISPUTES_SHOWN) -> Disputes:
    """The set's disputed questions (at most `limit`; None: all) and those settled by a
    reviewer or marked ambiguous, newest settlement first. A fixed number of queries, whatever
    the number of states, labels or disputes."""
    number, questions = _questions(question_set)
    needed = question_set.labels_needed
    place = {qid: n for n, qid in enumerate(questions)}
    open_pairs = []
    if needed > 1 and questions:
        open_pairs = sorted(
            _disagreeing(question_set, questions), key=lambda r: (r[1], place[r[2]], r[0])
        )
    shown = open_pairs if limit is None else open_pairs[:limit]
    settlements = list(
        LabelSettlement.objects.filter(sample_state__question_set=question_set)
        .select_related("reviewer", "sample_state")
        .only(
            "question_id",
            "outcome",
            "answer",
            "created_at",
            "reviewer__username",
            "sample_state__name",
            "sample_state__state_text",
        )
        .order_by("-created_at", "-pk")
    )
    pairs = {(s, q) for s, _, q in shown} | {
        (x.sample_state_id, x.question_id) for x in settlements
    }
    labels = _labels_of(pairs) if pairs else {}
    states = {
        s.pk: s
        for s in SampleState.objects.filter(pk__in={s for s, _, _ in shown}).only(
            "pk", "name", "state_text"
        )
    }
    disputed = []
    for state_id, _, qid in shown:
        given = labels[(state_id, qid)]
        if _outcome(given, needed).status != settling.DISPUTED:
            continue  # what SQL calls two answers, the settling rule may read as one
        sample, question = states[state_id], questions[qid]
        disputed.append(
            Dispute(
                sample.pk,
                sample.name,
                sample.state,
                question,
                _given(question, given),
                settling.DISPUTED,
            )
        )
    settled = [
        _settled(x, questions, labels[(x.sample_state_id, x.question_id)]) for x in settlements
    ]
    return Disputes(disputed, len(open_pairs), settled, number, needed)


def _settled(
    settlement: LabelSettlement,
    questions: dict[str, labelling.Question],
    labels: list[StateLabel],
) -> Dispute:
    # a question the labelling version no longer asks keeps its row, with nothing to choose
    question = questions.get(settlement.question_id) or labelling.Question(
        settlement.question_id, "", ()
    )
    ambiguous = settlement.outcome == settling.MARKED_AMBIGUOUS
    return Dispute(
        settlement.sample_state_id,
        settlement.sample_state.name,
        settlement.sample_state.state,
        question,
        _given(question, labels),
        settling.AMBIGUOUS if ambiguous else settling.SETTLED,
        reviewer=settlement.reviewer.get_username(),
        answer=None if ambiguous else settlement.answer,
        settled_at=settlement.created_at,
    )


def dispute(sample: SampleState, question_id: str) -> Dispute | None:
    """One question of `sample` as the disputes page shows its row (after a settlement, for
    the row htmx swaps in), or None when it is neither disputed nor settled by a reviewer."""
    _, questions = _questions(sample.question_set)
    question = questions.get(question_id)
    if question is None:
        return None
    labels = _labels_of({(sample.pk, question_id)})[(sample.pk, question_id)]
    settlement = (
        sample.settlements.filter(question_id=question_id).select_related("reviewer").first()
    )
    if settlement is not None:
        settlement.sample_state = sample
        return _settled(settlement, questions, labels)
    if _outcome(labels, sample.question_set.labels_needed).status != settling.DISPUTED:
        return None
    return Dispute(
        sample.pk, sample.name, sample.state, question, _given(question, labels), settling.DISPUTED
    )


def disputed_count(question_set: QuestionSet, version: Version | None = None) -> int:
    """How many questions of the set's states are disputed (the set page's and the labelling
    page's link say it): those of `version` when given (the labelling page has it already),
    else of the version states are labelled for. None read with one label needed."""
    if question_set.labels_needed <= 1:
        return 0
    if version is None:
        _, questions = _questions(question_set)
    else:
        questions = {q.id: q for q in labelling.questions_of(version.document)}
    return _disagreeing(question_set, questions).count() if questions else 0


def ambiguous_counts(question_set: QuestionSet, *, run: BatchRun | None = None) -> dict[str, int]:
    """Per question, how many of the set's states (only those `run` asked, when given) a
    reviewer marked ambiguous: they have no expected answer, so every pass rate leaves them out,
    and the rate says how many ("2 ambiguous left out")."""
    rows = LabelSettlement.objects.filter(
        sample_state__question_set=question_set, outcome=settling.MARKED_AMBIGUOUS
    )
    if run is not None:
        rows = rows.filter(
            sample_state__in=BatchItem.objects.filter(run=run, variant=0).values("state_id")
        )
    return dict(
        rows.order_by()
        .values("question_id")
        .annotate(n=Count("pk"))
        .values_list("question_id", "n")
    )


def ambiguous_left_out(run_ids: list[int]) -> dict[int, int]:
    """Per run of `run_ids`, how many question–state pairs of the states it asked a reviewer
    marked ambiguous (`ambiguous_counts` added up), in two queries for all the runs: the few
    ambiguous settlements of the runs' sets first, then the items of those states only (a
    join from every item of the runs read all of them: 85 ms at 20,000 states)."""
    per_state = dict(
        LabelSettlement.objects.filter(
            outcome=settling.MARKED_AMBIGUOUS,
            sample_state__question_set__in=BatchRun.objects.filter(pk__in=run_ids).values(
                "question_set"
            ),
        )
        .order_by()
        .values("sample_state_id")
        .annotate(n=Count("pk"))
        .values_list("sample_state_id", "n")
    )
    if not per_state:
        return {}
    left_out: dict[int, int] = {}
    for run_id, state_id in BatchItem.objects.filter(
        run_id__in=run_ids, variant=0, state_id__in=list(per_state)
    ).values_list("run_id", "state_id"):
        left_out[run_id] = left_out.get(run_id, 0) + per_state[state_id]
    return left_out


def blind_to(found: Disputes, question_set: QuestionSet, viewer: Any) -> set[str]:
    """The rows (`Dispute.key`) whose labels `viewer` may not see yet: on a blind set (two or
    more labels needed, the model not shown), a question still short of its labels that they
    have not labelled themselves — they may label it still, and another's label would anchor
    theirs. A reviewer (who settles) sees every row."""
    if question_set.labels_needed < 2 or question_set.labels_show_model:
        return set()
    if roles.may_review(viewer, question_set):
        return set()
    name = viewer.get_username() if getattr(viewer, "pk", None) else None
    return {
        d.key
        for d in found.disputed
        if len(d.labels) < question_set.labels_needed and name not in {x.labeller for x in d.labels}
    }
