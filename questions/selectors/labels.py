"""The labelling page's reads: the version a state is labelled for, the answers recorded about
each state, and the states worth labelling next."""

from __future__ import annotations

from django.conf import settings

from questions.core import check, labelling
from questions.models import BatchItem, QuestionSet, Version


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
