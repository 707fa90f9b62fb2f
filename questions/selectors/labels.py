"""The labelling page's reads: the version a state is labelled for, the answers recorded about
each state, and the states worth labelling next."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from questions.core import check, labelling, metrics
from questions.models import (
    BatchItem,
    LabelQueue,
    LabelReservation,
    QuestionSet,
    StateLabel,
    Version,
)


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
    question_set: QuestionSet, names: list[str] | None = None
) -> dict[str, list[labelling.Reading]]:
    """The answers recorded about each sample state of the set (by name; only `names` when
    given), newest first: per version and backend the latest run's real call (a control's
    variant 0), never a new one."""
    rows = BatchItem.objects.filter(
        run__question_set=question_set, status=BatchItem.Status.ANSWERED, variant=0
    )
    if names is not None:
        rows = rows.filter(sample_state__sample_state__name__in=names)
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
        ranked = labelling.rank(
            questions,
            [(name, expected or {}) for _, name, expected in rows[:QUEUE_WINDOW]],
            {},
            limit=None,
        )
        pks = {name: pk for pk, name, _ in rows[:QUEUE_WINDOW]}
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


def blind_unavailable(question_set: QuestionSet, labeller, pks: list[int]) -> set[tuple]:
    """With two or more labels needed, what of these states `labeller` is not offered:
    (state id, question) they hold a current label on or that has every label it needs from
    others, and (state id, None) for a state held for another labeller. Empty with one label
    needed (whoever labels last settles) or no labeller."""
    needed = question_set.labels_needed
    if needed <= 1 or not getattr(labeller, "pk", None) or not pks:
        return set()
    labels = StateLabel.objects.filter(sample_state_id__in=pks, current=True)
    out = set(labels.filter(labeller=labeller).values_list("sample_state_id", "question_id"))
    others = (
        labels.exclude(labeller=labeller)
        .values("sample_state_id", "question_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=needed)
    )
    out |= {(row["sample_state_id"], row["question_id"]) for row in others}
    held = LabelReservation.objects.filter(
        sample_state_id__in=pks, until__gt=timezone.now()
    ).exclude(labeller=labeller)
    out |= {(pk, None) for pk in held.values_list("sample_state_id", flat=True)}
    return out
