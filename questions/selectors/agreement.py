"""A set's agreement, question by question of the version its states are labelled for: the
labellers' current labels set against each other, each labeller and the model (the newest
finished run of that version) against the settled answers (`SampleState.expected`), and how
many states are settled, disputed, ambiguous or still open (`core.settling`). Built by
`core.agreement`; a fixed number of queries, whatever the number of states or labels."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum

from questions.core import agreement, labelling, metrics, settling
from questions.models import BatchRun, LabelSettlement, QuestionSet, StateLabel
from questions.selectors.labels import labelling_version
from questions.selectors.runs import latest_run, run_readings

#: what `run_readings` gives of an answer, as the answer `labelling.reading` reads
_READ_AS = {"choice": "choice", "score": "score", "noul": "noul"}


@dataclass(frozen=True)
class SetAgreement:
    """Per question of the labelling version, its agreement (`agreement.QuestionAgreement`);
    the version, the run the model's answers come from, and — when there is nothing to read —
    why, in words."""

    slug: str
    needed: int
    version: int | None = None
    run: BatchRun | None = None
    questions: list[agreement.QuestionAgreement] = field(default_factory=list)
    why: str = ""

    def as_dict(self) -> dict[str, Any]:
        run = self.run
        return {
            "set": self.slug,
            "version": self.version,
            "labels_needed": self.needed,
            "model_run": None if run is None else {"run": run.pk, "backend": run.backend},
            "why": self.why,
            "questions": [q.as_dict() for q in self.questions],
        }

    def summaries(self) -> list[tuple[str, str]]:
        """(question, "labels: 120 settled, 14 disputed, κ 0.71 [0.62, 0.79]") for each question
        that has a label or a settled answer: the lines the scorecard and the review show."""
        return [
            (q.question, q.summary())
            for q in self.questions
            if q.labellers.labellers or q.counts.get(settling.SETTLED)
        ]


def label_summaries(question_set: QuestionSet) -> list[tuple[str, str]]:
    """The scorecard's and the review's lines (`SetAgreement.summaries`: the labellers' figure,
    not the model's), kept while the set's labels do not change (`kept_agreement`). A set no
    one labelled (its expected answers written before labels were kept, or none) has none,
    read in one query."""
    labels = _label_stamp(question_set)
    if not labels["n"]:
        return []  # no one's label: nothing for the lines to say
    return kept_agreement(question_set, model=False, labels=labels).summaries()


def kept_agreement(
    question_set: QuestionSet, *, model: bool = True, labels: dict | None = None
) -> SetAgreement:
    """`set_agreement`, worked out once for what the set's labels, states and runs are now (a
    fingerprint of three aggregates: any label, undo, settlement, state change or finished run
    makes another) and kept in the cache: a page that shows it reads every label only when
    one changed."""
    states = question_set.sample_states.aggregate(
        n=Count("pk"), revisions=Sum("revision"), changed=Max("updated_at")
    )
    newest = (
        BatchRun.objects.filter(question_set=question_set)
        .order_by("-pk")
        .values_list("pk", "finished_at")
        .first()
    )
    stamp = repr(
        (
            model,
            question_set.pk,
            question_set.created_at,
            question_set.updated_at,
            sorted((labels or _label_stamp(question_set)).items()),
            sorted(states.items()),
            newest,
        )
    )
    key = "agreement:" + hashlib.sha256(stamp.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = set_agreement(question_set, model=model)
        cache.set(key, found, timeout=24 * 3600)
    return found


def _label_stamp(question_set: QuestionSet) -> dict[str, Any]:
    return StateLabel.objects.filter(sample_state__question_set=question_set).aggregate(
        n=Count("pk", filter=Q(current=True)), top=Max("pk"), undone=Max("undone_at")
    )


def set_agreement(question_set: QuestionSet, *, model: bool = True) -> SetAgreement:
    """The agreement of `question_set`'s labels, per question of its labelling version
    (`labels.labelling_version`): its current labels, settlements and settled answers in three
    queries, the model's answers from the version's newest finished run in one more (`model`
    False: not read, nor set against the settled answers)."""
    version = labelling_version(question_set)
    needed = question_set.labels_needed
    if version is None:
        return SetAgreement(question_set.slug, needed, why="no version to label for yet")
    questions = labelling.questions_of(version.document)
    by_id = {q.id: q for q in questions}
    labels: dict[str, dict[str, dict[str, Any]]] = {q.id: {} for q in questions}
    rows = StateLabel.objects.filter(
        sample_state__question_set=question_set, current=True, question_id__in=list(by_id)
    ).values_list("sample_state__name", "question_id", "labeller__username", "answer")
    for name, qid, who, answer in rows.iterator(chunk_size=2000):
        value = by_id[qid].stored(answer)
        if value is not None:  # a label of another shape: the question changed type since
            labels[qid].setdefault(name, {})[who] = value
    ambiguous = set(
        LabelSettlement.objects.filter(
            sample_state__question_set=question_set,
            question_id__in=list(by_id),
            outcome=settling.MARKED_AMBIGUOUS,
        ).values_list("sample_state__name", "question_id")
    )
    expected = dict(question_set.sample_states.values_list("name", "expected"))
    run = latest_run(version) if model else None
    answers = _model_answers(run, questions) if run is not None else None
    found = []
    for q in questions:
        settled = {
            name: value
            for name, given in expected.items()
            if (value := q.stored((given or {}).get(q.id))) is not None
        }
        counts = _counts(q.id, expected, labels[q.id], settled, ambiguous, needed)
        found.append(
            agreement.question_agreement(
                q.id,
                q.type,
                labels[q.id],
                settled,
                None if answers is None else answers[q.id],
                counts,
            )
        )
    return SetAgreement(question_set.slug, needed, version.number, run, found)


def _counts(qid, states, labels, settled, ambiguous, needed) -> dict[str, int]:
    """How many of the set's states are settled, disputed, ambiguous or open on `qid`: the
    settled answers are what the pass rates read; a dispute is what the labels say
    (`settling.settle`) while nothing settles it."""
    counts = dict.fromkeys(settling.STATUSES, 0)
    for name in states:
        if (name, qid) in ambiguous:
            status = settling.AMBIGUOUS
        elif name in settled:
            status = settling.SETTLED
        else:
            given = [settling.Given(who, a, 0) for who, a in labels.get(name, {}).items()]
            status = settling.settle(given, needed).status
            status = settling.OPEN if status == settling.SETTLED else status
        counts[status] += 1
    return counts


def _model_answers(run: BatchRun, questions: list[labelling.Question]) -> dict[str, dict]:
    """Per question, per state, the answer `run` gave as a label would be (the option, the
    nearest level, the side of the run's threshold): its real calls, read by the database."""
    out: dict[str, dict[str, Any]] = {q.id: {} for q in questions}
    readings = run_readings(run, {q.id: q.type for q in questions})
    for name, (_, values) in readings.items():
        for q, value in zip(questions, values, strict=True):
            if value is None:
                continue
            try:
                read = labelling.reading(q.type, {_READ_AS[q.type]: value}, run.threshold)
            except (KeyError, TypeError, ValueError):
                continue
            answer = q.value(read)
            if answer is not None and metrics.expected_fits(q.type, answer):
                out[q.id][name] = answer
    return out
