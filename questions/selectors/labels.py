"""The labelling page's reads: the version a state is labelled for, the answers recorded about
each state, the states worth labelling next (for everyone, and as one labeller is offered them:
blind, what they labelled and what has every label it needs left out), their last label (what
undo takes back), their hold on a state, and each labeller's progress (the page and `questions
labelling`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from questions.core import check, labelling, metrics
from questions.models import (
    BatchItem,
    LabelQueue,
    LabelQueueEntry,
    LabelReservation,
    LabelSettlement,
    QuestionSet,
    SampleState,
    StateLabel,
    Version,
)
from questions.selectors import settled


def labelling_version(question_set: QuestionSet, number: int | None = None) -> Version | None:
    """The version a state is labelled for: version `number` when named (None if the set has
    none), else the newest version whose document is valid (an invalid draft offers no
    options it may never keep), else the newest."""
    versions = question_set.versions.order_by("-number")
    if number is not None:
        return versions.filter(number=number).first()
    newest = None
    for version in versions.only("number", "document_text", "question_set_id", "status"):
        newest = newest or version
        if check.validate(version.document, limits=settings.DECISIONS_LIMITS).valid:
            return version
    return newest


def label_readings(
    question_set: QuestionSet, state: SampleState | None = None
) -> dict[str, list[labelling.Reading]]:
    """The answers recorded about each sample state of the set (by name; only `state`'s when
    given, read through the items' index by state), newest first: per version and backend the
    latest run's real call (a control's variant 0), never a new one; then what production
    answered, for a state the application sent (`production_readings`)."""
    rows = BatchItem.objects.filter(
        run__question_set=question_set, status=BatchItem.Status.ANSWERED, variant=0
    )
    if state is not None:
        rows = rows.filter(state_id=state.pk)
    rows = rows.order_by("-run_id").values_list(
        "sample_state__sample_state__name", "run__version__number", "run__backend", "answers"
    )
    seen: set[tuple[str, int, str]] = set()
    out: dict[str, list[labelling.Reading]] = {}
    for name, number, backend, answers in rows.iterator(chunk_size=500):
        if (name, number, backend) in seen:
            continue
        seen.add((name, number, backend))
        for qid, answer in (answers or {}).items():
            if isinstance(answer, dict):
                out.setdefault(name, []).append(
                    labelling.Reading(f"v{number} {backend}", qid, answer)
                )
    states = question_set.sample_states.all() if state is None else [state]
    for name, found in production_readings(states).items():
        out.setdefault(name, []).extend(found)
    return out


def production_readings(states) -> dict[str, list[labelling.Reading]]:
    """What production answered about each of `states` (a queryset, or states at hand) that
    the application sent, by name: one `Reading` per question it answered, as it sent it."""
    if isinstance(states, QuerySet):
        states = states.filter(source=SampleState.Source.PRODUCTION).values_list(
            "name", "production_version", "production_answers"
        )
        rows = states.iterator(chunk_size=500)
    else:
        rows = (
            (s.name, s.production_version, s.production_answers)
            for s in states
            if s.source == SampleState.Source.PRODUCTION
        )
    out: dict[str, list[labelling.Reading]] = {}
    for name, version, answers in rows:
        source = labelling.production_source(version)
        for qid, answer in (answers or {}).items():
            if isinstance(answer, dict):
                out.setdefault(name, []).append(
                    labelling.Reading(source, qid, answer, production=True)
                )
    return out


def expected_values(question_set: QuestionSet, version: Version) -> dict[str, set[str]]:
    """Per question of `version`, the answers the set's labelled states expect
    (`labelling.expected_values`), read by the database a question at a time (one distinct
    value each), not state by state."""
    out = {}
    for q in labelling.questions_of(version.document):
        field = KeyTransform(q.id, "expected")
        values = (
            question_set.sample_states.filter(expected__has_key=q.id)
            .annotate(value=field)
            .values_list("value", flat=True)
            .distinct()
        )
        out.update(labelling.expected_values([q], ({q.id: v} for v in values)))
    return out


def states_to_label(
    question_set: QuestionSet, version: Version, *, limit: int | None = labelling.DEFAULT_LIMIT
) -> list[labelling.Candidate]:
    """The set's states worth labelling next for `version`'s questions (`labelling.rank`)."""
    states = list(question_set.sample_states.order_by("name").values_list("name", "expected"))
    return labelling.rank(
        labelling.questions_of(version.document),
        [(name, expected or {}) for name, expected in states],
        label_readings(question_set),
        limit=limit,
    )


#: how many stored entries the queue reads at a time while it skips those labelled since
QUEUE_WINDOW = 100


def label_queue(
    question_set: QuestionSet,
    version: Version,
    *,
    labeller=None,
    skip: Iterable[int] = (),
    limit: int = labelling.DEFAULT_LIMIT,
) -> list[labelling.Candidate] | None:
    """The next `limit` states to label, from the ranking stored when the set's last run
    finished (`LabelQueue`), each with the questions it still lacks (as many reads as the
    page shows, however many states the set holds): stored entries in their order, skipping a
    state labelled since and those in `skip` (state ids); with `labeller` and two or more
    labels needed (`blind_unavailable`), what they labelled themselves, what has every label
    it needs and a state held for another; then the states added since, ranked (they have no
    recorded answers yet). None when nothing is stored for `version`: the caller ranks every
    state (`states_to_label`)."""
    queue = LabelQueue.objects.filter(
        question_set=question_set, version_number=version.number
    ).first()
    if queue is None:
        return None
    questions = labelling.questions_of(version.document)
    by_id = {q.id: q for q in questions}
    skip = set(skip)
    fields = ("sample_state_id", "sample_state__name", "sample_state__expected")
    entries = queue.entries.exclude(sample_state_id__in=skip).values_list(
        *fields, "questions", "reasons"
    )
    out: list[labelling.Candidate] = []
    for start in range(0, 10**9, QUEUE_WINDOW):
        window = list(entries[start : start + QUEUE_WINDOW])
        out += _still_open(question_set, labeller, by_id, window)
        if len(out) >= limit or len(window) < QUEUE_WINDOW:
            break
    if len(out) < limit:  # the states added since the queue was built
        added = question_set.sample_states.filter(created_at__gt=queue.built_at)
        rows = added.exclude(pk__in=skip).order_by("name").values_list("pk", "name", "expected")
        rows = list(rows[:QUEUE_WINDOW])
        sent = production_readings(added.filter(pk__in=[pk for pk, _, _ in rows]))
        ranked = labelling.rank(
            questions,
            [(name, expected or {}) for _, name, expected in rows],
            sent,  # the only answers a state added since the last run has
            limit=None,
            known=expected_values(question_set, version) if sent else None,
        )
        pks = {name: pk for pk, name, _ in rows}
        fresh = [
            (pks[c.name], c.name, {}, c.questions, c.reasons) for c in ranked
        ]  # what they lack is ranked already: the expected answers are not asked again
        out += _still_open(question_set, labeller, by_id, fresh)
    return out[:limit]


def _still_open(question_set, labeller, by_id, window) -> list[labelling.Candidate]:
    """The entries of `window` (state id, name, expected, questions, reasons) with the
    questions they still lack, for `labeller`; those that lack none left out."""
    unavailable = blind_unavailable(question_set, labeller, [row[0] for row in window])
    out = []
    for pk, name, expected, qids, reasons in window:
        kept = [
            (qid, reason)
            for qid, reason in zip(qids, reasons, strict=False)
            if qid in by_id
            and not _fits(by_id[qid], (expected or {}).get(qid, _MISSING))
            and (pk, qid) not in unavailable
            and (pk, None) not in unavailable
        ]
        if kept:
            out.append(labelling.Candidate(name, 0.0, [q for q, _ in kept], [r for _, r in kept]))
    return out


_MISSING = object()


def _fits(question: labelling.Question, expected) -> bool:
    return expected is not _MISSING and metrics.expected_fits(question.type, expected)


def blind_unavailable(
    question_set: QuestionSet, labeller, pks: list[int] | None = None
) -> set[tuple]:
    """What of these states (every state of the set when `pks` is None) `labeller` is not
    offered: (state id, question) a reviewer settled or marked ambiguous (labels no longer
    change it); and with two or more labels needed, (state id, question) they hold a current
    label on or that has every label it needs from others, and (state id, None) for a state
    held for another labeller. With one label needed only the reviewers' (whoever labels last
    settles)."""
    if pks is not None and not pks:
        return set()
    settlements = LabelSettlement.objects.all()
    labels = StateLabel.objects.filter(current=True)
    held = LabelReservation.objects.filter(until__gt=timezone.now())
    if pks is None:
        settlements = settlements.filter(sample_state__question_set=question_set)
        labels = labels.filter(sample_state__question_set=question_set)
        held = held.filter(sample_state__question_set=question_set)
    else:
        settlements = settlements.filter(sample_state_id__in=pks)
        labels = labels.filter(sample_state_id__in=pks)
        held = held.filter(sample_state_id__in=pks)
    out = set(settlements.values_list("sample_state_id", "question_id"))
    needed = question_set.labels_needed
    if needed <= 1 or not getattr(labeller, "pk", None):
        return out
    out |= set(labels.filter(labeller=labeller).values_list("sample_state_id", "question_id"))
    others = (
        labels.exclude(labeller=labeller)
        .values("sample_state_id", "question_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=needed)
    )
    out |= {(row["sample_state_id"], row["question_id"]) for row in others}
    out |= {
        (pk, None)
        for pk in held.exclude(labeller=labeller).values_list("sample_state_id", flat=True)
    }
    return out


# --- the labelling page and `questions labelling` ------------------------------------------------


@dataclass(frozen=True)
class Offered:
    """A state offered to one labeller: its id and the ranking's candidate, with only the
    questions still open to them (strongest first, as ranked)."""

    pk: int
    candidate: labelling.Candidate

    @property
    def name(self) -> str:
        return self.candidate.name


def states_for(
    question_set: QuestionSet,
    version: Version,
    labeller,
    *,
    skip: Iterable[int] = (),
    wanted: int | None = None,
    limit: int | None = None,
) -> list[Offered]:
    """The states worth labelling next as `labeller` is offered them: a state in `skip` left
    out, and each state's questions less those not offered to them (`blind_unavailable`:
    blind, what they labelled, what has every label it needs, another's hold; a reviewer's
    settlement); a state left with none is not offered. With `limit`, the first `limit`, read
    from the ranking stored after the last run (`label_queue`: as many reads at any size)
    when there is one, with state `wanted` first when it is still open to them and not among
    them; else every state ranked (`states_to_label`)."""
    if limit is not None:
        queued = label_queue(question_set, version, labeller=labeller, skip=skip, limit=limit)
        if queued is not None:
            pks = dict(
                question_set.sample_states.filter(name__in=[c.name for c in queued]).values_list(
                    "name", "pk"
                )
            )
            out = [Offered(pks[c.name], c) for c in queued if c.name in pks]
            if wanted is not None and wanted not in pks.values():
                out = _one_state(question_set, version, labeller, wanted) + out
            return out
    candidates = states_to_label(question_set, version, limit=None)
    pks = dict(question_set.sample_states.values_list("name", "pk"))
    unavailable = blind_unavailable(question_set, labeller) if candidates else set()
    skip = set(skip)
    out = []
    for c in candidates:
        pk = pks.get(c.name)
        if pk is None or pk in skip or (pk, None) in unavailable:
            continue
        kept = [
            (q, r)
            for q, r in zip(c.questions, c.reasons, strict=False)
            if (pk, q) not in unavailable
        ]
        if kept:
            offered = labelling.Candidate(
                c.name, c.score, [q for q, _ in kept], [r for _, r in kept]
            )
            out.append(Offered(pk, offered))
    return out


def _one_state(question_set: QuestionSet, version: Version, labeller, pk: int) -> list[Offered]:
    """State `pk` as `labeller` is offered it (its queue entry's reasons, or ranked alone), or
    nothing when it has no question open to them."""
    row = question_set.sample_states.filter(pk=pk).values_list("pk", "name", "expected").first()
    if row is None:
        return []
    # by the state alone (it is the set's, read above; a set has one queue), in no order:
    # the state's index finds its entry, where a join to the queue walks the whole queue
    entry = next(
        iter(
            LabelQueueEntry.objects.filter(sample_state_id=pk)
            .order_by()
            .values_list("questions", "reasons")[:1]
        ),
        None,
    )
    if entry is None:
        sent = production_readings(question_set.sample_states.filter(pk=pk))
        ranked = labelling.rank(
            labelling.questions_of(version.document),
            [row[1:]],
            sent,
            limit=1,
            known=expected_values(question_set, version) if sent else None,
        )
        entry = (ranked[0].questions, ranked[0].reasons) if ranked else ([], [])
    by_id = {q.id: q for q in labelling.questions_of(version.document)}
    found = _still_open(question_set, labeller, by_id, [(*row, *entry)])
    return [Offered(pk, c) for c in found]


def last_label(question_set: QuestionSet, labeller) -> StateLabel | None:
    """`labeller`'s newest current label on the set: the one an undo takes back
    (`services.labels.state_label_undo`), whenever the page was opened."""
    if not getattr(labeller, "pk", None):
        return None
    return (
        StateLabel.objects.filter(
            sample_state__question_set=question_set, labeller=labeller, current=True
        )
        .select_related("sample_state")
        .only("question_id", "answer", "created_at", "sample_state__name")
        .order_by("-created_at", "-pk")
        .first()
    )


@dataclass(frozen=True)
class LabellerProgress:
    """One labeller's part: the labels they gave on the version's questions (`done`), and
    that plus what is still open to them (`wanted`: no settled answer, not theirs yet, fewer
    labels than needed, no reviewer's word)."""

    labeller: str
    done: int
    wanted: int

    def as_json(self) -> dict[str, Any]:
        return {"labeller": self.labeller, "done": self.done, "wanted": self.wanted}


@dataclass(frozen=True)
class LabellingProgress:
    """How far a set's labelling is, for the version states are labelled for: its states and
    questions, how many (state, question) pairs are settled, how many labels each needs, and
    each labeller's part (those who gave a label, and the one asking)."""

    version: int
    needed: int
    show_model: bool
    states: int
    questions: tuple[str, ...]
    settled: int
    labellers: tuple[LabellerProgress, ...]
    #: per question, how many states have a settled answer (what the controls count)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        return self.states * len(self.questions)

    @property
    def blind(self) -> bool:
        """Labellers see neither the others' labels nor the model's answer before theirs."""
        return self.needed > 1 and not self.show_model

    def of(self, username: str) -> LabellerProgress | None:
        return next((x for x in self.labellers if x.labeller == username), None)

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "needed": self.needed,
            "show_model": self.show_model,
            "blind": self.blind,
            "states": self.states,
            "questions": list(self.questions),
            "pairs": self.pairs,
            "settled": self.settled,
            "settled_per_question": dict(self.counts),
            "labellers": [x.as_json() for x in self.labellers],
        }


def labelling_progress(
    question_set: QuestionSet, version: Version, *, viewer=None
) -> LabellingProgress:
    """The set's labelling progress for `version`'s questions (`LabellingProgress`), each
    labeller's done / wanted beside it; `viewer` is listed even before their first label.
    With one label needed the database counts it (`_counted_progress`, no row read); with two
    or more the pairs are counted in memory (`read_progress`: every state's expected answers
    and every current label, a handful of queries)."""
    questions = labelling.questions_of(version.document)
    if question_set.labels_needed <= 1:
        return _counted_progress(question_set, version, questions, viewer)
    return read_progress(question_set, version, viewer=viewer)


def read_progress(question_set: QuestionSet, version: Version, *, viewer=None) -> LabellingProgress:
    """`labelling_progress` with two or more labels needed: the settled answers counted by the
    database (`_settled_counts`), and in memory only the states someone labelled or a reviewer
    settled, with every current label (what the labellers did, not every state)."""
    qids = [q.id for q in labelling.questions_of(version.document)]
    states, counts = _settled_counts(question_set, qids)
    touched = (
        question_set.sample_states.filter(Q(labels__current=True) | Q(settlements__isnull=False))
        .distinct()
        .values_list("pk", "expected")
    )
    missing = {(pk, q) for pk, expected in touched for q in qids if q not in (expected or {})}
    settlements = set(
        LabelSettlement.objects.filter(
            sample_state__question_set=question_set, question_id__in=qids
        ).values_list("sample_state_id", "question_id")
    )
    open_pairs = missing - settlements  # of the touched states
    open_count = states * len(qids) - sum(counts.values()) - len(missing & settlements)
    given = StateLabel.objects.filter(
        sample_state__question_set=question_set, current=True, question_id__in=qids
    ).values_list("sample_state_id", "question_id", "labeller__username")
    mine: dict[str, set[tuple[int, str]]] = {}
    count: dict[tuple[int, str], int] = {}
    for pk, qid, who in given.iterator(chunk_size=2000):
        mine.setdefault(who, set()).add((pk, qid))
        count[(pk, qid)] = count.get((pk, qid), 0) + 1
    needed = question_set.labels_needed
    viewer_name = viewer.get_username() if getattr(viewer, "pk", None) else None
    if viewer_name is not None:
        mine.setdefault(viewer_name, set())
    full = {p for p in open_pairs if count.get(p, 0) >= needed} if needed > 1 else set()
    people = []
    for who in sorted(mine, key=lambda name: (name != viewer_name, name)):
        theirs = mine[who]
        closed = len(open_pairs & theirs) + len(full - theirs) if needed > 1 else 0
        people.append(LabellerProgress(who, len(theirs), len(theirs) + open_count - closed))
    return LabellingProgress(
        version=version.number,
        needed=needed,
        show_model=question_set.labels_show_model,
        states=states,
        questions=tuple(qids),
        settled=sum(counts.values()),
        labellers=tuple(people),
        counts=counts,
    )


def _settled_counts(question_set: QuestionSet, qids: list[str]) -> tuple[int, dict[str, int]]:
    """How many states the set holds, and per question how many hold an expected answer for
    it (`settled.settled_counts`: kept for the set's fingerprint, else one aggregate query)."""
    return settled.settled_counts(question_set, qids)


def _counted_progress(
    question_set: QuestionSet, version: Version, questions: list, viewer
) -> LabellingProgress:
    """`labelling_progress` with one label needed, counted by the database (a few aggregate
    queries, no row read, whatever the number of states): a question of a state is settled
    when the state holds an expected answer for it; open when it holds none and no reviewer
    marked it ambiguous; each labeller's wanted is their labels and every open question
    (whoever labels next settles it)."""
    qids = [q.id for q in questions]
    states, counts = _settled_counts(question_set, qids)
    settled = sum(counts.values())
    ambiguous = LabelSettlement.objects.filter(
        sample_state__question_set=question_set,
        question_id__in=qids,
        outcome=LabelSettlement.Outcome.AMBIGUOUS,
    ).count()
    open_pairs = max(0, states * len(qids) - settled - ambiguous)
    done = dict(
        StateLabel.objects.filter(
            sample_state__question_set=question_set, current=True, question_id__in=qids
        )
        .values_list("labeller__username")
        .annotate(n=Count("pk"))
        .order_by()
    )
    viewer_name = viewer.get_username() if getattr(viewer, "pk", None) else None
    if viewer_name is not None:
        done.setdefault(viewer_name, 0)
    people = tuple(
        LabellerProgress(who, done[who], done[who] + open_pairs)
        for who in sorted(done, key=lambda name: (name != viewer_name, name))
    )
    return LabellingProgress(
        version=version.number,
        needed=question_set.labels_needed,
        show_model=question_set.labels_show_model,
        states=states,
        questions=tuple(qids),
        settled=settled,
        labellers=people,
        counts=counts,
    )


def held_until(sample: SampleState, labeller) -> datetime | None:
    """Until when `sample` is held for `labeller` (it may have run out), or None."""
    if not getattr(labeller, "pk", None):
        return None
    return sample.reservations.filter(labeller=labeller).values_list("until", flat=True).first()
