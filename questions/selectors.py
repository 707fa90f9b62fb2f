"""Reads that span models, shaped for the pages (one query per list, no N+1)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import Avg, Count, Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce

from questions import backends, lints, metrics, spec
from questions.models import (
    BatchItem,
    BatchRun,
    Label,
    LabelMove,
    QuestionSet,
    ReviewEvent,
    RunReport,
    Version,
)


def question_sets(search: str = "") -> QuerySet[QuestionSet]:
    """Sets with their newest version's number and status, the version under `production`,
    how many versions wait for review and the last finished run's checked and passed pairs
    (`last_checked`, `last_passed`, `last_run_id`), last edited first; those whose slug, name
    or description holds `search`, when given."""
    newest = Version.objects.filter(question_set=OuterRef("pk")).order_by("-number")
    production = Label.objects.filter(question_set=OuterRef("pk"), name=Label.BASELINE)
    waiting = (
        Version.objects.filter(question_set=OuterRef("pk"), status=Version.Status.IN_REVIEW)
        .order_by()
        .values("question_set")
        .annotate(n=Count("pk"))
        .values("n")
    )
    last_run = BatchRun.objects.filter(question_set=OuterRef("pk"), checked__isnull=False).order_by(
        "-finished_at", "-pk"
    )
    sets = QuestionSet.objects.select_related("owner").annotate(
        newest_number=Subquery(newest.values("number")[:1]),
        newest_status=Subquery(newest.values("status")[:1]),
        production_number=Subquery(production.values("version__number")[:1]),
        in_review=Coalesce(Subquery(waiting), 0),
        last_checked=Subquery(last_run.values("checked")[:1]),
        last_passed=Subquery(last_run.values("passed")[:1]),
        last_run_id=Subquery(last_run.values("pk")[:1]),
    )
    if "\x00" in search:
        return QuestionSet.objects.none()  # no set's text holds a NUL character
    if search.strip():
        term = search.strip()
        sets = sets.filter(
            Q(slug__icontains=term) | Q(name__icontains=term) | Q(description__icontains=term)
        )
    return sets.order_by("-updated_at")


@dataclass(frozen=True)
class Window:
    """One page of a long list: its rows, where it starts, how many rows the list has, and
    where the pages before and after start (None at the ends)."""

    rows: list[Any]
    start: int
    total: int
    size: int

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    @property
    def next_start(self) -> int | None:
        return self.end if self.end < self.total else None

    @property
    def previous_start(self) -> int | None:
        return max(0, self.start - self.size) if self.start else None


def window(rows: QuerySet, start: int, size: int, total: int | None = None) -> Window:
    """Rows `start` to `start + size` of `rows` (ordered): a query for them and one count (a
    start past the end shows the last page)."""
    total = rows.order_by().count() if total is None else total
    start = max(0, min(start, (max(total - 1, 0) // size) * size))
    return Window(list(rows[start : start + size]), start, total, size)


#: rows a page of the set list and of a set's sample states shows
SETS_PAGE = 50
STATES_PAGE = 50


def question_sets_page(search: str = "", start: int = 0) -> Window:
    """A page of `question_sets(search)`; counted without the annotations."""
    sets = question_sets(search)
    plain = QuestionSet.objects.filter(pk__in=sets.values("pk")) if search.strip() else None
    total = (plain if plain is not None else QuestionSet.objects).count()
    return window(sets, start, SETS_PAGE, total=total)


#: the sample states a set page can show: every one, those with expected answers, those with
#: none, those that missed an expected answer or failed in the set's last finished run
STATE_SHOWS = {
    "all": "every state",
    "labelled": "with expected answers",
    "unlabelled": "without expected answers",
    "failing": "failing in the last run",
}


class OctetLength(Func):
    """A text's length in UTF-8 bytes, worked out by the database."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))")


def last_finished_run(question_set: QuestionSet) -> BatchRun | None:
    """The set's last finished plain run (done), newest first."""
    return (
        question_set.batch_runs.filter(kind=BatchRun.PLAIN, status=BatchRun.Status.DONE)
        .order_by("-finished_at", "-pk")
        .only("pk", "finished_at", "status", "kind")
        .first()
    )


def sample_states_page(
    question_set: QuestionSet,
    *,
    name: str = "",
    tag: str = "",
    show: str = "all",
    start: int = 0,
    failing_in: BatchRun | None = None,
) -> Window:
    """A page of a set's sample states, by name, without their contents (the size is worked
    out by the database): those whose name holds `name`, tagged `tag`, and as `show` picks
    (`STATE_SHOWS`; "failing": the states of run `failing_in` that missed an expected answer
    or got none)."""
    states = question_set.sample_states.only(
        "pk", "name", "tags", "expected", "revision", "updated_at", "question_set_id"
    ).annotate(text_bytes=OctetLength("state_text"))
    if "\x00" in name or "\x00" in tag:
        states = states.none()  # no name or tag holds a NUL character
    if name.strip():
        states = states.filter(name__icontains=name.strip())
    if tag.strip():
        if connection.features.supports_json_field_contains:
            states = states.filter(tags__contains=[tag.strip()])
        else:  # SQLite keeps a JSON list as its text, each string as json.dumps writes it
            states = states.filter(tags__icontains=json.dumps(tag.strip()))
    if show == "labelled":
        states = states.exclude(Q(expected={}) | Q(expected__isnull=True))
    elif show == "unlabelled":
        states = states.filter(Q(expected={}) | Q(expected__isnull=True))
    elif show == "failing":
        missed = BatchItem.objects.filter(run=failing_in, variant=0).filter(
            Q(misses__gt=0) | Q(status=BatchItem.Status.FAILED)
        )
        states = (
            states.filter(pk__in=missed.values("sample_state__sample_state"))
            if failing_in is not None
            else states.none()
        )
    return window(states.order_by("name"), start, STATES_PAGE)


#: the sample states the editor's preview picker lists (another comes through ?state=)
PICKER_STATES = 100


def picker_states(question_set: QuestionSet, selected: int | None) -> tuple[list[Any], int]:
    """The editor's preview picker: the set's first `PICKER_STATES` states by name (names
    only), with the `selected` one added when it is further on; and how many the set has."""
    states = question_set.sample_states.only("pk", "name", "question_set_id").order_by("name")
    listed = list(states[:PICKER_STATES])
    total = len(listed)
    if total == PICKER_STATES:
        total = question_set.sample_states.count()
    if selected is not None and all(s.pk != selected for s in listed):
        listed += list(states.filter(pk=selected))
    return listed, total


#: what a list of versions shows never needs their documents (1.8 MB each at the limits)
WITHOUT_DOCUMENTS = ("document_text", "parent__document_text")


def versions_of(question_set: QuestionSet) -> QuerySet[Version]:
    """A set's versions, newest first, with author and parent, without the documents (reading
    `.document` of one loads it alone)."""
    return (
        question_set.versions.select_related("author", "parent")
        .defer(*WITHOUT_DOCUMENTS)
        .order_by("-number")
    )


def labels_of(question_set: QuestionSet) -> QuerySet[Label]:
    return question_set.labels.select_related("version__question_set").defer(
        "version__document_text"
    )


def label_moves_of(question_set: QuestionSet) -> QuerySet[LabelMove]:
    return question_set.label_moves.select_related("from_version", "to_version", "actor").defer(
        "from_version__document_text", "to_version__document_text"
    )


EXPORT_SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "question-set-1.schema.json"


def approval_of(version: Version) -> ReviewEvent | None:
    """The event that approved a version (the last one, should there be more)."""
    return (
        version.events.filter(kind=ReviewEvent.Kind.APPROVED)
        .select_related("actor")
        .order_by("-created_at", "-id")
        .first()
    )


def export_document(version: Version) -> dict[str, Any]:
    """The export document of DESIGN.md §6 — the one place that shapes it. Its `questions` map
    is the approved document exactly; `sha256` is the canonical hash of that map; `model` is
    the one recorded when the version was approved (frozen with it), and `answered_by` the
    concrete model that answered the run it was approved on (a name, a sorted list when several
    did, null when none is known); `advice`, when the version has any, sits beside `questions`
    — never inside it, never sent to a provider."""
    approval = approval_of(version)
    document = {
        "format": spec.EXPORT_FORMAT,
        "question_set": version.question_set.slug,
        "version": version.number,
        "status": spec.EXPORT_STATUS,  # only an approved version has an export
        "sha256": version.sha256,
        "model": version.approved_model,
        "answered_by": version.approved_model_answered,
        "approved_by": approval.actor.get_username() if approval else None,
        "approved_at": approval.created_at.isoformat() if approval else None,
        "questions": version.document,
    }
    if version.advice:
        document["advice"] = version.advice
    return document


def export_text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


@dataclass(frozen=True)
class ExportBody:
    """An export document's bytes as served: as they are, gzipped, and their entity tag."""

    text: bytes
    gzipped: bytes
    etag: str


#: export bodies kept per process, the most recently served (a few MB each); a plain dict, as
#: Django's local-memory cache would copy (pickle) a body on every request
EXPORTS_KEPT = 16
_EXPORTS: OrderedDict[str, ExportBody] = OrderedDict()
_EXPORTS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ExportRef:
    """An approved version as the export fetch finds it: which one, and a key that changes
    with every part of its export body apart from the document (an approved version's
    document never changes): the set's slug, the version's status, model, revision and last
    change, and its approval (when, by whom)."""

    version_id: int
    number: int
    slug: str
    key: str


def export_ref(
    slug: str, *, label: str | None = None, number: int | None = None
) -> ExportRef | None:
    """The approved version a label points at, or the approved version `number`, with its
    approval; None for an unknown set, label or version, or one that is not approved. Never a
    fallback.

    This is the runtime's hot path (every fetch, most of them answered 304), so it is one
    plain statement: the ORM would spend more time building the query than the database
    takes to answer it. Table and column names come from the models."""
    if (label is None) == (number is None):
        return None
    q = connection.ops.quote_name

    def column(model: Any, field: str) -> str:
        return q(model._meta.get_field(field).column)

    user_model = get_user_model()
    version, qset, event = (q(m._meta.db_table) for m in (Version, QuestionSet, ReviewEvent))
    labels, users = q(Label._meta.db_table), q(user_model._meta.db_table)
    selected = ", ".join(
        [
            *(
                f"v.{column(Version, f)}"
                for f in (
                    "id",
                    "number",
                    "status",
                    "approved_model",
                    "revision",
                    "sha256",
                    "approved_model_answered",
                )
            ),
            f"v.{column(Version, 'updated_at')}",
            f"s.{column(QuestionSet, 'slug')}",
            f"a.{column(ReviewEvent, 'id')}",
            f"a.{column(ReviewEvent, 'created_at')}",
            f"u.{column(user_model, user_model.USERNAME_FIELD)}",
        ]
    )
    params: list[Any] = []
    label_join = ""
    if label is not None:
        label_join = (
            f"JOIN {labels} l ON l.{column(Label, 'version')} = v.{column(Version, 'id')} "
            f"AND l.{column(Label, 'name')} = %s"
        )
        params.append(label)
    e_id, e_version = column(ReviewEvent, "id"), column(ReviewEvent, "version")
    e_kind, e_at = column(ReviewEvent, "kind"), column(ReviewEvent, "created_at")
    sql = (
        f"SELECT {selected} FROM {version} v "
        f"JOIN {qset} s ON s.{column(QuestionSet, 'id')} = v.{column(Version, 'question_set')} "
        f"{label_join} "
        f"LEFT JOIN {event} a ON a.{e_id} = (SELECT e.{e_id} FROM {event} e "
        f"WHERE e.{e_version} = v.{column(Version, 'id')} AND e.{e_kind} = %s "
        f"ORDER BY e.{e_at} DESC, e.{e_id} DESC LIMIT 1) "
        f"LEFT JOIN {users} u ON u.{column(user_model, 'id')} = a.{column(ReviewEvent, 'actor')} "
        f"WHERE s.{column(QuestionSet, 'slug')} = %s AND v.{column(Version, 'status')} = %s"
    )
    params += [ReviewEvent.Kind.APPROVED.value, slug, Version.Status.APPROVED.value]
    if number is not None:
        sql += f" AND v.{column(Version, 'number')} = %s"
        params.append(number)
    with connection.cursor() as cursor:
        cursor.execute(sql + " LIMIT 1", params)
        row = cursor.fetchone()
    if row is None:
        return None
    return ExportRef(
        version_id=row[0], number=row[1], slug=row[8], key=json.dumps([str(v) for v in row])
    )


def export_body(ref: ExportRef) -> ExportBody:
    """The export of an approved version, made once per version and process and then served
    from memory: a request that finds it reads no document."""
    with _EXPORTS_LOCK:
        body = _EXPORTS.get(ref.key)
        if body is not None:
            _EXPORTS.move_to_end(ref.key)
            return body
    version = Version.objects.select_related("question_set").get(pk=ref.version_id)
    text = export_text(export_document(version)).encode("utf-8")
    body = ExportBody(
        text=text,
        gzipped=gzip.compress(text, compresslevel=6, mtime=0),
        etag=export_etag(text),
    )
    with _EXPORTS_LOCK:
        _EXPORTS[ref.key] = body
        while len(_EXPORTS) > EXPORTS_KEPT:
            _EXPORTS.popitem(last=False)
    return body


def export_etag(text: bytes) -> str:
    """The export's entity tag: the SHA-256 of its whole body, so any change of body changes
    it (the `sha256` inside names the questions only)."""
    return hashlib.sha256(text).hexdigest()


def exportable_version(
    slug: str, *, label: str | None = None, number: int | None = None
) -> Version | None:
    """The approved version a label points at, or the approved version `number`; None for an
    unknown set, label or version, or one that is not approved. Never a fallback."""
    return (
        Version.objects.approved(slug, label=label, number=number)
        .select_related("question_set")
        .first()
    )


def review_queue() -> QuerySet[Version]:
    return (
        Version.objects.filter(status=Version.Status.IN_REVIEW)
        .select_related("question_set", "author")
        .order_by("updated_at")
    )


def review_baseline(version: Version) -> tuple[Version | None, str]:
    """What a version is reviewed against: the version under `production`, else the last
    approved one (never itself)."""
    question_set = version.question_set
    label = question_set.labels.filter(name=Label.BASELINE).select_related("version").first()
    if label and label.version_id != version.pk:
        return label.version, Label.BASELINE
    approved = (
        question_set.versions.filter(status=Version.Status.APPROVED)
        .exclude(pk=version.pk)
        .order_by("-number")
        .first()
    )
    return approved, "the last approved version" if approved else ""


def run_cases(run: BatchRun) -> list[metrics.Case]:
    """Every answered (state, question) of a run with what its state expected: a control's
    real calls (variant 0) only."""
    cases = []
    items = run.items.filter(status=BatchItem.Status.ANSWERED, variant=0).values_list(
        "sample_state__name", "sample_state__expected", "answers"
    )  # not the states' contents: a report needs names and expected answers only
    for name, expected, answers in items:
        expected = expected or {}
        for qid, answer in (answers or {}).items():
            cases.append(metrics.Case(name, qid, answer.get("type", ""), answer, expected.get(qid)))
    return cases


def run_report_computed(run: BatchRun) -> metrics.Report:
    """A run's test report worked out from every answer (one pass over them)."""
    return metrics.report(run_cases(run), threshold=run.threshold)


def stored_report(run: BatchRun, against: BatchRun | None = None) -> dict[str, Any] | None:
    """The report a finished run stored (`services.summaries`): its own (`against` None) or
    the run set against `against`; None when it stored none."""
    if not (run.pk and run.finished):
        return None
    return RunReport.objects.filter(run=run, against=against).values_list("data", flat=True).first()


def run_report(run: BatchRun) -> metrics.Report:
    """A run's test report: a finished run's as it stored it when it finished, in constant
    time (migration 0018 stored those of the runs finished before); an unfinished run's, or
    a finished one's that stored none, worked out afresh and not stored: a read never
    writes."""
    data = stored_report(run)
    if data is not None:
        return metrics.report_from_json(data)
    return run_report_computed(run)


def run_counts(run: BatchRun) -> dict[str, int]:
    counts = {status: 0 for status, _ in BatchItem.Status.choices}
    for row in run.items.values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    counts["total"] = sum(counts.values())
    counts["done"] = counts["answered"] + counts["failed"] + counts["cancelled"]
    return counts


def run_summary(run: BatchRun) -> dict[str, Any]:
    """The run as `questions batch --json` prints it."""
    counts = run_counts(run)
    report = run_report(run)
    duration = None
    if run.started_at and run.finished_at:
        duration = round((run.finished_at - run.started_at).total_seconds() * 1000)
    return {
        "run": run.pk,
        "set": run.question_set.slug,
        "version": run.version.number,
        "backend": run.backend,
        "calibrated": backends.calibrated(run.backend),
        "status": run.status,
        "states": counts["total"],
        "answered": counts["answered"],
        "failed": counts["failed"],
        "pass_rate": report.pass_rate,
        "per_question": {
            qid: {"checked": q.checked, "passed": q.passed, "pass_rate": q.pass_rate}
            for qid, q in report.questions.items()
        },
        "duration_ms": duration,
    }


def latest_run(version: Version | None) -> BatchRun | None:
    if version is None:
        return None
    return (
        version.batch_runs.filter(kind=BatchRun.PLAIN, status=BatchRun.Status.DONE)
        .order_by("-id")
        .first()
    )


def run_evidence(run: BatchRun | None) -> dict[str, Any] | None:
    """What a review shows of a run: its stored pass rate, answered/failed, cost per call
    (a few aggregate queries, whatever the number of states). A read: the summary was stored
    when the run finished (`services.batches`; the migration that added it filled older runs)."""
    if run is None:
        return None
    counts = run_counts(run)
    cost = run.items.exclude(decision=None).aggregate(cost=Avg("decision__cost"))["cost"]
    return {
        "run": run.pk,
        "run_obj": run,
        "backend": run.backend,
        "calibrated": backends.calibrated(run.backend),
        "states": counts["total"],
        "answered": counts["answered"],
        "failed": counts["failed"],
        "checked": run.checked,
        "passed": run.passed,
        "pass_rate": run.pass_rate,
        "cost_per_call": cost,
    }


#: the flipped cells a review lists inline (the rest are in the compare grid)
REVIEW_FLIPS_SHOWN = 50


#: what a comparison needs of an answer, by question type (its reading and its check)
READING_KEYS = {"choice": "choice", "score": "score", "noul": "noul"}


def run_readings(run: BatchRun, qtypes: dict[str, str]) -> dict[str, tuple[Any, tuple]]:
    """A run's answered states reduced to what a comparison reads: state name → (expected
    answers, per question of `qtypes` the chosen option, the score or P(true), or None), each
    extracted by the database from the stored answers, so no answer's probabilities are
    decoded (see `metrics.compare_readings`)."""
    fields = {  # explicit transforms: a question id may hold "__"
        f"r{i}": KeyTextTransform(READING_KEYS.get(qtype, "noul"), KeyTransform(qid, "answers"))
        for i, (qid, qtype) in enumerate(qtypes.items())
    }
    rows = (
        run.items.filter(status=BatchItem.Status.ANSWERED, variant=0)  # a control's real calls
        .annotate(**fields)
        .values_list("sample_state__name", "sample_state__expected", *fields)
    )
    kinds = [qtype == "choice" for qtype in qtypes.values()]
    return {
        name: (
            expected,
            tuple(
                None if v is None else str(v) if choice else float(v)
                for v, choice in zip(values, kinds, strict=True)
            ),
        )
        for name, expected, *values in rows
    }


def _full_answers(run: BatchRun, states: set[str]) -> dict[str, dict[str, Any]]:
    return dict(
        run.items.filter(
            status=BatchItem.Status.ANSWERED, variant=0, sample_state__name__in=states
        ).values_list("sample_state__name", "answers")
    )


def compared(document: dict[str, Any]) -> dict[str, str]:
    """The questions of `document` a comparison reads: id → type."""
    return {
        qid: q["type"]
        for qid, q in document.items()
        if isinstance(q, dict) and q.get("type") in READING_KEYS
    }


def run_delta(
    base: BatchRun, this: BatchRun, document: dict[str, Any], shown: int
) -> metrics.RunDelta:
    """Run `this` against run `base` on the states both answered (the questions of
    `document`): pass rates over the pairs both checked and the cells that moved, regressions
    first, the first `shown` of them with their whole answers (the others with their
    readings). The pair a finished run stored (`services.summaries`: its version's review
    baseline) is read as stored; two other finished runs never change, so their comparison is
    worked out once per process and kept in the cache."""
    data = stored_report(this, base) if base.finished else None
    if data is not None and data["shown"] >= shown and data.get("types") == compared(document):
        return metrics.delta_from_json(data)
    key = None
    if base.finished_at and this.finished_at and base.finished and this.finished:
        stamps = (base.pk, base.finished_at.timestamp(), this.pk, this.finished_at.timestamp())
        key = f"run-delta:{shown}:" + ":".join(map(str, stamps))
        delta = cache.get(key)
        if delta is not None:
            return delta
    delta = run_delta_computed(base, this, document, shown)
    if key:
        cache.set(key, delta, timeout=None)
    return delta


def run_delta_computed(
    base: BatchRun, this: BatchRun, document: dict[str, Any], shown: int
) -> metrics.RunDelta:
    """`run_delta` worked out from both runs' answers."""
    types = compared(document)
    delta = metrics.compare_readings(
        run_readings(base, types),
        run_readings(this, types),
        types,
        this.threshold,
        threshold_before=base.threshold,
    )
    listed = delta.changes[:shown]
    states = {c.state for c in listed}
    before, after = _full_answers(base, states), _full_answers(this, states)
    delta.changes[: len(listed)] = [
        dataclasses.replace(
            c,
            before=(before.get(c.state) or {}).get(c.question) or c.before,
            after=(after.get(c.state) or {}).get(c.question) or c.after,
        )
        for c in listed
    ]
    return delta


def review_evidence(version: Version, baseline: Version | None) -> dict[str, Any]:
    """This version's latest finished run against the baseline's on the same states: both
    pass rates, and the cells that flipped (regressions first), the first `REVIEW_FLIPS_SHOWN`
    listed."""
    this, base = latest_run(version), latest_run(baseline)
    return {
        "this": run_evidence(this),
        "base": run_evidence(base),
        "delta": run_delta(base, this, version.document, REVIEW_FLIPS_SHOWN)
        if this and base
        else None,
        "flips_shown": REVIEW_FLIPS_SHOWN,
    }


def version_named(
    slug: str, *, number: int | None = None, label: str | None = None
) -> Version | None:
    """The version a command names: by label (approved only), by number, or the newest."""
    if label:
        return exportable_version(slug, label=label)
    if number is not None:
        return Version.objects.of(slug, number).select_related("question_set").first()
    versions = Version.objects.filter(question_set__slug=slug).select_related("question_set")
    return versions.order_by("-number").first()


def sample_state_paths(question_set: QuestionSet) -> lints.StatePaths:
    """The paths of a set's sample states, for the state-path lint: read from the database only
    when a question names a path in backticks, and once per request however often it asks."""

    def load() -> list[Any]:
        states = []
        for text in question_set.sample_states.values_list("state_text", flat=True):
            try:
                states.append(spec.loads(text))
            except spec.JSONTextError:
                continue  # a stored state is JSON; one that is not names no path
        return states

    return lints.StatePaths(load)
