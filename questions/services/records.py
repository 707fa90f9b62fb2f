"""Records in the ecosystem's `.jevl` format (`questions.records`): the recordings of a run or a
version written out as records, and records read in as recordings the `recorded` backend
replays with no network.

Writing streams: two queries whatever the number of decisions (the decisions, with only the
columns a line needs, and their answers, both read in chunks in decision order and merged), so
a run over 20,000 states is written in constant memory. Only answered decisions are written; a
failed call has no answers and is not a record.

Reading is all or nothing in one transaction: a line that is not a record, or whose questions
are no version of the set, refuses the whole file naming its line, and nothing is imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from questions import roles
from questions.core import records, spec
from questions.models import (
    BatchItem,
    BatchRun,
    Decision,
    DecisionAnswer,
    QuestionSet,
    SampleStateRevision,
    Version,
)
from questions.services.audit import audit_record
from questions.services.errors import Invalid, require
from questions.services.versions import limits

#: the rows each query of a write reads at a time, and the records an import stores at a time
CHUNK = 500
#: the wire imported records are kept as recordings of: the one `recorded` replays by default
IMPORTED_BACKEND = "typesafe"
AUTHORS_ONLY = "Only authors import records."
#: how many unmatched lines a refusal names
SHOWN_LINES = 10

_COLUMNS = (
    "pk",
    "request_text",
    "response_text",
    "backend",
    "model_asked",
    "model_answered",
    "calibrated",
    "usage",
    "created_at",
    "sample_state__expected",
)


def recordings_of(*, run: BatchRun | None = None, version: Version | None = None) -> QuerySet:
    """The answered decisions of a run (its items' calls) or of a version (every call that
    asked it: previews, runs, imports)."""
    if run is not None:
        calls = BatchItem.objects.filter(run=run, decision__isnull=False).values("decision_id")
        decisions = Decision.objects.filter(pk__in=calls)
    elif version is not None:
        decisions = Decision.objects.filter(version=version)
    else:
        raise ValueError("recordings_of needs a run or a version")
    return decisions.filter(status=200)


@dataclass
class RecordWriter:
    """The lines of `decisions`, one per answered decision, in the order they were recorded.
    After iterating: `written`, and `skipped` (calls whose request holds no questions map —
    the `llm` wire sends a chat prompt)."""

    decisions: QuerySet
    written: int = 0
    skipped: int = 0

    def __iter__(self) -> Iterator[str]:
        rows = self.decisions.order_by("pk").values_list(*_COLUMNS).iterator(chunk_size=CHUNK)
        answers = (
            DecisionAnswer.objects.filter(decision__in=self.decisions.values("pk"))
            .order_by("decision_id", "pk")
            .values_list("decision_id", "question_id", "answer")
            .iterator(chunk_size=CHUNK)
        )
        pending = next(answers, None)
        for pk, text, response, backend, asked, answered, calibrated, usage, at, expected in rows:
            mine: dict[str, Any] = {}
            while pending is not None and pending[0] <= pk:
                if pending[0] == pk:
                    mine[pending[1]] = pending[2]
                pending = next(answers, None)
            meta: dict[str, Any] = {"backend": backend, "model_asked": asked}
            if not calibrated:
                meta["calibrated"] = False
            line = records.record_line(
                request_text=text,
                model=answered or asked,
                answers=mine,
                ts=at,
                usage=usage,
                expected=expected,
                meta=meta,
                response_text=response,
            )
            if line is None:
                self.skipped += 1
                continue
            self.written += 1
            yield line


def records_filename(
    question_set: QuestionSet, *, run: BatchRun | None = None, version: Version | None = None
) -> str:
    which = f"run-{run.pk}" if run is not None else f"v{version.number}"
    return f"{question_set.slug}-{which}{records.SUFFIX}"


@dataclass
class ImportReport:
    """What an import did: records imported (by version number), records skipped because they
    are recorded already (here, or earlier in the file), and how many of the imported ones
    name a state that is no sample state of the set (kept by content; see docs/integrating.md)."""

    imported: int = 0
    skipped: int = 0
    by_version: dict[int, int] = field(default_factory=dict)
    unlinked_states: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "versions": {str(n): c for n, c in sorted(self.by_version.items())},
            "states_not_in_set": self.unlinked_states,
        }


def records_import(
    *, question_set: QuestionSet, lines: Iterable[bytes | str] | None, user: Any
) -> ImportReport:
    """Keep the records in `lines` (a `.jevl` file's lines) as recordings of the set's
    versions, all or nothing. Each is read by `records.read_line` (strict JSON, `v` 1, its id,
    its questions, its answers by the typesafe wire's rules) and matched to the version whose
    canonical questions hash it has; a record already recorded (the same id: model, state and
    questions) is skipped, never doubled. `Invalid` names the first bad line, or the lines
    whose questions are no version of the set; then nothing is imported. `NotAllowed` unless
    `user` is an author; `Invalid` when there is no file (`lines` None)."""
    require(user, roles.may_write, AUTHORS_ONLY, on=question_set)
    if lines is None:
        raise Invalid("Choose a .jevl file of records to import.", code="no_file")
    versions: dict[str, Version] = {}
    for version in question_set.versions.order_by("number"):
        versions[version.sha256] = version  # the newest version with these questions
    report = ImportReport()
    seen: set[str] = set()
    unmatched: list[int] = []
    pending: list[tuple[records.Record, Version]] = []
    price = settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS
    with transaction.atomic():
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                record = records.read_line(text, number, limits=limits(), price_per_million=price)
            except records.RecordError as exc:
                raise Invalid(f"{exc}. Nothing was imported.", code="bad_record") from None
            version = versions.get(record.questions_sha256)
            if version is None:
                unmatched.append(number)
                continue
            if record.id in seen:
                report.skipped += 1
                continue
            seen.add(record.id)
            pending.append((record, version))
            if len(pending) >= CHUNK:
                _store(question_set, pending, user, report)
                pending = []
        if unmatched:
            raise Invalid(_unmatched(question_set, unmatched), code="no_version")
        _store(question_set, pending, user, report)
        if report.imported:  # a file of nothing new changed nothing
            audit_record(
                action="records.imported",
                actor=user,
                question_set=question_set,
                detail=report.to_json(),
            )
    return report


def _unmatched(question_set: QuestionSet, lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:SHOWN_LINES])
    more = f" and {len(lines) - SHOWN_LINES} more" if len(lines) > SHOWN_LINES else ""
    which = "line" if len(lines) == 1 else "lines"
    return (
        f"The questions of {which} {shown}{more} are no version of {question_set.slug} "
        "(no version has their canonical questions hash): import them as a version first. "
        "Nothing was imported."
    )


def _store(
    question_set: QuestionSet,
    pending: list[tuple[records.Record, Version]],
    user: Any,
    report: ImportReport,
) -> None:
    """Store a chunk of records as recordings (skipping those recorded already)."""
    if not pending:
        return
    recorded = _recorded_already(
        {r.questions_sha256 for r, _ in pending}, {r.state_sha256 for r, _ in pending}
    )
    states = _sample_states(question_set, {r.state_sha256 for r, _ in pending})
    rows: list[tuple[Decision, list[DecisionAnswer], records.Record]] = []
    for record, version in pending:
        if (record.questions_sha256, record.state_sha256, record.model) in recorded:
            report.skipped += 1
            continue
        rows.append((*_rows(record, version, states.get(record.state_sha256), user), record))
        report.imported += 1
        report.by_version[version.number] = report.by_version.get(version.number, 0) + 1
        report.unlinked_states += record.state_sha256 not in states
    if not rows:
        return
    decisions = Decision.objects.bulk_create(decision for decision, _, _ in rows)
    for decision, (_, _, record) in zip(decisions, rows, strict=True):
        decision.created_at = record.ts  # when it was recorded, not when it was imported
    Decision.objects.bulk_update(decisions, ["created_at"])
    DecisionAnswer.objects.bulk_create(answer for _, answers, _ in rows for answer in answers)


def _recorded_already(questions: set[str], states: set[str]) -> set[tuple[str, str, str]]:
    """(questions hash, state hash, model that answered) of the answered recordings through the
    imported wire among these hashes: the ids recorded already."""
    found = Decision.objects.filter(
        backend=IMPORTED_BACKEND,
        status=200,
        questions_sha256__in=questions,
        state_sha256__in=states,
    ).values_list("questions_sha256", "state_sha256", "model_answered", "model_asked")
    return {(q, s, answered or asked) for q, s, answered, asked in found}


def _sample_states(question_set: QuestionSet, shas: set[str]) -> dict[str, SampleStateRevision]:
    """The set's newest saved content with each of these state hashes."""
    out: dict[str, SampleStateRevision] = {}
    for revision in SampleStateRevision.objects.filter(
        sample_state__question_set=question_set, state_sha256__in=shas
    ).order_by("-pk"):
        out.setdefault(revision.state_sha256, revision)
    return out


def _rows(
    record: records.Record,
    version: Version,
    sample_state: SampleStateRevision | None,
    user: Any,
) -> tuple[Decision, list[DecisionAnswer]]:
    """The unsaved recording of one record: the request as the typesafe wire sent it (the
    record's state and questions in their order, asking the model the record says was asked),
    answered by the record's model, the checked answers keyed as a live call's are — so a
    replay asking either model finds it, as the application asked it or as it was pinned."""
    body = record.request_body
    checked = record.checked
    decision = Decision(
        backend=IMPORTED_BACKEND,
        model_asked=record.model_asked,
        model_answered=record.model,
        request_text=spec.wire_json(body).decode("utf-8"),
        request_sha256=spec.sha256_of(body),
        state_sha256=record.state_sha256,
        questions_sha256=record.questions_sha256,
        response_text=spec.wire_json(record.response_body).decode("utf-8"),
        status=200,
        usage=checked.usage,
        cost=checked.cost,
        provider_ms=None,
        total_ms=0.0,
        request_id=record.id,
        calibrated=True,
        version=version,
        sample_state=sample_state,
        user=roles.recorded_as(user),
    )
    answers = [
        DecisionAnswer(
            decision=decision,
            question_id=qid,
            question_sha256=record.parsed[qid].sha256,
            state_sha256=record.state_sha256,
            model=record.model_asked,
            model_answered=record.model,
            answer=answer,
        )
        for qid, answer in checked.answers.items()
    ]
    return decision, answers
