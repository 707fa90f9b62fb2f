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

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    Avg,
    Case,
    Count,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce

from questions.core import controls, labelling, lints, metrics, spec, state_files, stats
from questions.engine import backends
from questions.models import (
    BatchItem,
    BatchRun,
    Decision,
    ExportFetch,
    Label,
    LabelMove,
    QuestionSet,
    ReviewEvent,
    RunReport,
    Version,
)


def question_sets(search: str = "") -> QuerySet[QuestionSet]:
    """Sets with their newest version's number and status, the version under `production`,
    how many versions wait for review and the checked and passed pairs of the latest finished
    plain run that checked any — not a control's, a drift's or a gate's; a failed run checks
    nothing: the set list keeps the earlier figure — (`last_checked`, `last_passed`,
    `last_run_id`), last edited first; those whose slug, name or description holds `search`,
    when given."""
    newest = Version.objects.filter(question_set=OuterRef("pk")).order_by("-number")
    production = Label.objects.filter(question_set=OuterRef("pk"), name=Label.BASELINE)
    waiting = (
        Version.objects.filter(question_set=OuterRef("pk"), status=Version.Status.IN_REVIEW)
        .order_by()
        .values("question_set")
        .annotate(n=Count("pk"))
        .values("n")
    )
    last_run = BatchRun.objects.filter(
        question_set=OuterRef("pk"), kind=BatchRun.PLAIN, checked__gt=0
    ).order_by("-finished_at", "-pk")
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


#: an item of a finished run that failed: it got no answer, or one of its answers missed the
#: expected one (`BatchItem.misses`, which the run's summary counts with `metrics.passes`)
FAILING_ITEM = Q(status=BatchItem.Status.FAILED) | Q(misses__gt=0)


def results_order(items: QuerySet[BatchItem]) -> QuerySet[BatchItem]:
    """A run's items in the order its results table lists them: failed states first, then
    those that missed most expected answers, then by state name. A finished run stores each
    item's place in it (`BatchItem.place`, `services.summaries`), which a page reads instead."""
    return items.annotate(
        rank=Case(
            When(status=BatchItem.Status.FAILED, then=Value(0)),
            When(misses__gt=0, then=Value(1)),
            default=Value(2),
        )
    ).order_by("rank", F("misses").desc(nulls_last=True), "sample_state__name", "pk")


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
        missed = BatchItem.objects.filter(FAILING_ITEM, run=failing_in, variant=0)
        states = (  # the items' own copy of their state: no revision is read
            states.filter(pk__in=missed.values("state"))
            if failing_in is not None
            else states.none()
        )
        if failing_in is not None and not (name.strip() or tag.strip()):
            # a run of the set asks each of its states once (`batch_create`: a state's current
            # revision), and a state a run asked is never deleted: one failing item is one
            # failing state, counted from the index of the items alone
            total = missed.count()
            return window(states.order_by("name"), start, STATES_PAGE, total=total)
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


@dataclass(frozen=True)
class LabelFetched:
    """A label as the set page shows it with the fetch log: its latest fetch (by any token),
    when it was last re-pointed to another version, and whether nothing fetched it since."""

    label: Label
    last: ExportFetch | None
    moved_at: Any  # datetime | None: the last move from one version to another

    @property
    def unfetched_since_move(self) -> bool:
        return self.moved_at is not None and (
            self.last is None or self.last.last_fetched_at < self.moved_at
        )


def labels_fetched(question_set: QuestionSet) -> list[LabelFetched]:
    """The set's labels, each with its latest fetch and last move: two queries (one without a
    fetch), whatever the number of labels or of logged fetches (each label's latest is one
    probe of an index)."""
    latest = ExportFetch.objects.filter(
        question_set=OuterRef("question_set"), label=OuterRef("name")
    ).order_by("-last_fetched_at", "-id")
    moved = LabelMove.objects.filter(
        question_set=OuterRef("question_set"), name=OuterRef("name"), from_version__isnull=False
    ).order_by("-created_at", "-id")
    labels = list(
        labels_of(question_set).annotate(
            last_fetch_id=Subquery(latest.values("id")[:1]),
            moved_at=Subquery(moved.values("created_at")[:1]),
        )
    )
    ids = [label.last_fetch_id for label in labels if label.last_fetch_id is not None]
    fetched = (
        ExportFetch.objects.select_related("token", "version")
        .defer("version__document_text")
        .in_bulk(ids)
        if ids
        else {}
    )
    return [
        LabelFetched(label, fetched.get(label.last_fetch_id), label.moved_at) for label in labels
    ]


def fetches_of(question_set: QuestionSet) -> list[dict[str, Any]]:
    """Who fetched what, per label and token: the latest fetch (when, the version and ETag
    served, 200 or 304) and how many fetches the log counts; newest first within a label. A
    fetch by version number has no label (None)."""
    latest = ExportFetch.objects.filter(
        question_set=question_set, label=OuterRef("label"), token=OuterRef("token")
    ).order_by("-last_fetched_at", "-id")
    groups = list(
        ExportFetch.objects.filter(question_set=question_set)
        .values("label", "token")
        .annotate(total=Sum("fetches"), latest=Subquery(latest.values("id")[:1]))
        .order_by()
    )
    rows = (
        ExportFetch.objects.select_related("token", "version")
        .defer("version__document_text")
        .in_bulk([g["latest"] for g in groups])
    )
    out = []
    for g in groups:
        row = rows[g["latest"]]
        out.append(
            {
                "label": row.label or None,
                "token": row.token.name,
                "last_fetched_at": row.last_fetched_at.isoformat(),
                "version": row.version.number,
                "etag": row.etag,
                "status": row.status,
                "fetches": g["total"],
            }
        )
    out.sort(key=lambda r: r["last_fetched_at"], reverse=True)
    out.sort(key=lambda r: (r["label"] is None, r["label"] or ""))
    return out


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
    """The export document — the one place that shapes it. Its `questions` map
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
    set_id: int
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
            f"s.{column(QuestionSet, 'id')}",
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
        version_id=row[0],
        number=row[1],
        slug=row[8],
        set_id=row[12],
        key=json.dumps([str(v) for v in row]),
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
    """Every answered (state, question) of a run with what its state expected — the names and
    expected answers of the revisions it asked, not the states' contents: a control's real
    calls (variant 0) only."""
    rows = run.items.filter(status=BatchItem.Status.ANSWERED, variant=0).values_list(
        "sample_state__name", "sample_state__expected", "answers"
    )
    cases = []
    for name, expected, answers in rows:
        expected = expected or {}
        for qid, answer in (answers or {}).items():
            cases.append(metrics.Case(name, qid, answer.get("type", ""), answer, expected.get(qid)))
    return cases


def run_tally(run: BatchRun) -> metrics.Tally:
    """A run's answered items added up (`metrics.Tally`): its summary, test report and tag
    slices in one pass over the answers (the revisions' expected answers and tags, not the
    states' contents), a control's real calls (variant 0) only."""
    tally = metrics.Tally(run.threshold)
    rows = run.items.filter(status=BatchItem.Status.ANSWERED, variant=0).values_list(
        "pk", "sample_state__tags", "sample_state__expected", "answers"
    )
    for pk, tags, expected, answers in rows:
        tally.add(pk, tags, expected, answers)
    return tally


def run_report_computed(run: BatchRun) -> metrics.Report:
    """A run's test report worked out from every answer (`run_tally`)."""
    return run_tally(run).report()


def stored_report(run: BatchRun, against: BatchRun | None = None) -> dict[str, Any] | None:
    """The report a finished run stored (`services.summaries`): its own (`against` None) or
    the run set against `against`; None when it stored none."""
    if not (run.pk and run.finished):
        return None
    return RunReport.objects.filter(run=run, against=against).values_list("data", flat=True).first()


def run_report(run: BatchRun) -> metrics.Report:
    """A run's test report: a finished run's as it stored it when it finished, in constant
    time (migration 0020 stored those of the runs finished before); an unfinished run's, or
    a finished one's that stored none, worked out afresh and not stored: a read never
    writes."""
    data = stored_report(run)
    if data is not None:
        return metrics.report_from_json(data)
    return run_report_computed(run)


def run_tag_slices(run: BatchRun) -> list[metrics.Slice]:
    """A run's pass rate per tag of its states: a finished run's as it stored them with its
    report (`services.summaries`), in constant time; otherwise worked out, never stored."""
    data = stored_report(run)
    if data is not None and "tags" in data:
        return [metrics.Slice(*row) for row in data["tags"]]
    return run_tag_slices_computed(run)


def run_tag_slices_computed(run: BatchRun) -> list[metrics.Slice]:
    """`run_tag_slices` from the answers (`run_tally`): the tags as the run asked them (its
    items' revisions'), a control's real calls only."""
    return run_tally(run).slices()


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
        "checked": report.checked,
        "passed": report.passed,
        "pass_rate": report.pass_rate,
        "pass_rate_interval": report.pass_rate_interval,
        "per_question": {
            qid: {
                "checked": q.checked,
                "passed": q.passed,
                "pass_rate": q.pass_rate,
                "pass_rate_interval": q.pass_rate_interval,
            }
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
        "pass_rate_interval": stats.interval_list(run.passed or 0, run.checked or 0),
        "rate_words": stats.rate_words(run.passed or 0, run.checked or 0),
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


def compared(document: Any) -> dict[str, str]:
    """The questions of a stored document a comparison reads: id → type."""
    if not isinstance(document, dict):
        return {}
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


def paired_verdicts(run_before: BatchRun, run_after: BatchRun) -> dict[str, stats.Paired]:
    """The paired verdicts of two runs on the states both checked (McNemar's exact test,
    `stats.paired`): under "overall" per state (a state passes when it passes every question
    both runs checked on it), and under each question id of `run_after`'s version. Each run
    reads its nouls at its own threshold. Two finished runs never change, so their verdicts are
    kept in the cache once a process has them: read from the report a finished run stored with
    its review baseline's run (`services.summaries`), else worked out."""
    key = None
    if (
        run_before.finished
        and run_after.finished
        and run_before.finished_at
        and run_after.finished_at
    ):
        stamps = (
            run_before.pk,
            run_before.finished_at.timestamp(),
            run_after.pk,
            run_after.finished_at.timestamp(),
            run_after.version.revision,  # a draft's questions (their types) may change
        )
        key = "paired:" + ":".join(map(str, stamps))
        found = cache.get(key)
        if found is not None:
            return found
        data = stored_report(run_after, run_before)  # the pair stored with its review baseline
        if (
            data is not None
            and "paired" in data
            and data.get("types") == compared(run_after.version.document)
        ):
            found = paired_from_json(data["paired"])
            cache.set(key, found, timeout=None)
            return found
    found = paired_verdicts_computed(run_before, run_after)
    if key:
        cache.set(key, found, timeout=None)
    return found


def paired_verdicts_computed(run_before: BatchRun, run_after: BatchRun) -> dict[str, stats.Paired]:
    """`paired_verdicts` from both runs' answers."""
    types = compared(run_after.version.document)
    by_question = metrics.paired_checks(
        run_readings(run_before, types),
        run_readings(run_after, types),
        types,
        run_after.threshold,
        threshold_before=run_before.threshold,
    )
    found = {"overall": stats.paired(list(metrics.state_checks(by_question).values()))}
    for qid, checks in by_question.items():
        found[qid] = stats.paired([checks[state] for state in sorted(checks)])
    return found


#: a paired verdict as a stored report holds it
PAIRED_FIELDS = ("n", "passed_before", "passed_after", "better", "worse", "p_value")


def paired_as_json(found: dict[str, stats.Paired]) -> list[list[Any]]:
    """Paired verdicts as rows (a list keeps their order; PostgreSQL's jsonb sorts keys)."""
    return [[key, *(getattr(p, f) for f in PAIRED_FIELDS)] for key, p in found.items()]


def paired_from_json(rows: list[list[Any]]) -> dict[str, stats.Paired]:
    return {key: stats.Paired(*values) for key, *values in rows}


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


# --- the scorecard --------------------------------------------------------------------------


def run_passes(runs: list[BatchRun]) -> dict[int, dict[str, dict[str, bool]]]:
    """Per run (by id), per question, per state whether its real answer (variant 0) passed the
    state's expected one: one query for all the runs, whatever their number."""
    thresholds = {run.pk: run.threshold for run in runs}
    out: dict[int, dict[str, dict[str, bool]]] = {pk: {} for pk in thresholds}
    items = BatchItem.objects.filter(
        run__in=list(thresholds), status=BatchItem.Status.ANSWERED, variant=0
    ).values_list("run_id", "sample_state__name", "sample_state__expected", "answers")
    for run_id, name, expected, answers in items:
        for qid, answer in (answers or {}).items():
            case = metrics.Case(
                name, qid, answer.get("type", ""), answer, (expected or {}).get(qid)
            )
            if case.checked:
                ok = metrics.passes(case.qtype, answer, case.expected, thresholds[run_id])
                out[run_id].setdefault(qid, {})[name] = ok
    return out


def overall_passes(per_question: dict[str, dict[str, bool]], questions: Any) -> dict[str, bool]:
    """Per state: whether every one of `questions` it was checked on passed."""
    out: dict[str, bool] = {}
    for qid in questions:
        for state, ok in per_question.get(qid, {}).items():
            out[state] = out.get(state, True) and ok
    return out


#: the control kinds a scorecard reads a verdict from
SCORECARD_CONTROLS = (controls.SHUFFLE, controls.ORDERS)
#: what a scorecard prices: this many production calls
CALLS_PRICED = 1000


def _rate(passed: int, n: int) -> dict[str, Any]:
    return {
        "pass_rate": round(passed / n, stats.PLACES) if n else None,
        "pass_rate_interval": stats.interval_list(passed, n),
        "n": n,
        "passed": passed,
        "words": stats.rate_words(passed, n),
    }


def _run_ref(run: BatchRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "run": run.pk,
        "backend": run.backend,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "try": run.live_questions is not None,
        "live_questions": run.live_questions,
    }


def scorecard(question_set: QuestionSet) -> dict[str, Any]:
    """Is v3 better than v2? Per version (newest first, kept and approved marked) and question:
    the pass rate of the version's latest finished full run on the default backend with its
    interval and n, the verdicts of its latest shuffle and order controls, the cost of
    `CALLS_PRICED` production calls at what that run's calls cost, and what this set's runs
    spent. A fixed number of queries, whatever the number of versions, runs or states."""
    versions = list(
        question_set.versions.select_related("author")
        .defer("document_text", "advice_text")
        .order_by("-number")
    )
    labels: dict[int, list[str]] = {}
    for name, version_id in question_set.labels.order_by("name").values_list("name", "version_id"):
        labels.setdefault(version_id, []).append(name)
    runs = (
        BatchRun.objects.filter(
            question_set=question_set,
            status=BatchRun.Status.DONE,
            kind__in=[BatchRun.PLAIN, *SCORECARD_CONTROLS],
            tag="",
        )
        .only("id", "version_id", "kind", "backend", "threshold", "live_questions", "finished_at")
        .order_by("-id")
    )
    latest: dict[tuple[int, str], BatchRun] = {}
    for run in runs:
        if run.kind == BatchRun.PLAIN and run.backend != backends.DEFAULT:
            continue
        latest.setdefault((run.version_id, run.kind), run)
    chosen = list(latest.values())
    plain_ids = [r.pk for r in chosen if r.kind == BatchRun.PLAIN]
    passes = run_passes([r for r in chosen if r.kind == BatchRun.PLAIN])
    answered: dict[int, list[controls.Answered]] = {}
    qtypes: dict[int, dict[str, str]] = {}
    control_items = BatchItem.objects.filter(
        run__in=[r.pk for r in chosen if r.kind != BatchRun.PLAIN],
        status=BatchItem.Status.ANSWERED,
    ).values_list("run_id", "sample_state__name", "variant", "answers", "sample_state__expected")
    for run_id, name, variant, answers, expected in control_items:
        answered.setdefault(run_id, []).append(
            controls.Answered(name, variant, answers or {}, expected or {})
        )
        for qid, answer in (answers or {}).items():
            qtypes.setdefault(run_id, {}).setdefault(qid, answer.get("type", ""))
    costs = {
        row["run_id"]: row
        for row in BatchItem.objects.filter(run__in=plain_ids, decision__isnull=False)
        .values("run_id")
        .annotate(cost=Avg("decision__cost"), calls=Count("decision"))
    }
    spent = Decision.objects.filter(
        pk__in=BatchItem.objects.filter(run__question_set=question_set).values("decision_id"),
        backend__in=list(backends.LIVE),
    ).aggregate(
        total=Sum("cost"), calls=Count("pk"), unpriced=Count("pk", filter=Q(cost__isnull=True))
    )
    newest = versions[0] if versions else None
    order = list(newest.document) if newest else []
    for per_run in passes.values():
        order += [qid for qid in per_run if qid not in order]
    rows = []
    for version in versions:
        run = latest.get((version.pk, BatchRun.PLAIN))
        per_question = passes.get(run.pk, {}) if run else {}
        questions: dict[str, dict[str, Any]] = {}
        for qid in order:
            if qid not in per_question:
                continue
            results = per_question[qid]
            questions[qid] = _rate(sum(results.values()), len(results))
        checks = []
        for kind in SCORECARD_CONTROLS:
            control = latest.get((version.pk, kind))
            if control is None:
                continue
            report = controls.control_report(
                kind, qtypes.get(control.pk, {}), answered.get(control.pk, []), control.threshold
            )
            checks.append((kind, control, report))
            for qid, found in report.items():
                cell = questions.setdefault(
                    qid,
                    {
                        "pass_rate": None,
                        "pass_rate_interval": None,
                        "n": 0,
                        "passed": 0,
                        "words": "no run",
                    },
                )
                if kind == controls.SHUFFLE and found.no_signal is not None:
                    cell["no_signal"] = found.no_signal
                    cell["few_answers"] = found.few_answers
                    cell["shuffle_run"] = control.pk
                if kind == controls.ORDERS and found.flip_rate is not None and found.varied:
                    cell["order_flip_rate"] = round(found.flip_rate, stats.PLACES)
                    cell["order_compared"] = found.compared
                    cell["orders_run"] = control.pk
        overall = overall_passes(per_question, list(per_question))
        cost = costs.get(run.pk) if run else None
        per_call = cost["cost"] if cost else None
        rows.append(
            {
                "version": version.number,
                "status": version.status,
                "status_display": version.get_status_display(),
                "kept": version.is_kept,
                "approved": version.is_approved,
                "labels": labels.get(version.pk, []),
                "author": version.author.get_username(),
                "run": _run_ref(run),
                "overall": _rate(sum(overall.values()), len(overall)) if run else None,
                "questions": questions,
                "controls": {
                    kind: {
                        "run": control.pk,
                        "title": controls.TITLES[kind],
                        "no_signal": sorted(q for q, f in report.items() if f.no_signal),
                    }
                    for kind, control, report in checks
                },
                "cost_per_call": per_call,
                "cost_per_1000_calls": None if per_call is None else per_call * CALLS_PRICED,
                "priced_calls": cost["calls"] if cost else 0,
            }
        )
    return {
        "set": question_set.slug,
        "backend": backends.DEFAULT,
        "questions": [qid for qid in order if any(qid in r["questions"] for r in rows)],
        "price_per_million_input_tokens": settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS,
        "calls_priced": CALLS_PRICED,
        "spent": {
            "cost": spent["total"] or 0.0,
            "calls": spent["calls"],
            "unpriced_calls": spent["unpriced"],
        },
        "versions": rows,
    }


def review_comparisons(
    version: Version, baseline: Version | None, baseline_name: str = ""
) -> list[dict[str, Any]]:
    """What the review page leads with: this version's latest finished run against the
    baseline's (`review_baseline`: production, or the last approved version) — or, with
    nothing approved yet, against its parent's and the latest kept version's — each a paired
    verdict per question and overall (`paired_verdicts`). A comparison whose other version has
    no run says so."""
    against: list[tuple[Version, str]] = []
    if baseline is not None:
        against.append((baseline, baseline_name))
    else:
        if version.parent_id:
            against.append((version.parent, "the version it came from"))
        kept = (
            version.question_set.versions.filter(status=Version.Status.KEPT)
            .exclude(pk=version.pk)
            .defer(*WITHOUT_DOCUMENTS)
            .order_by("-number")
            .first()
        )
        if kept is not None and kept.pk != version.parent_id:
            against.append((kept, "the latest kept version"))
        elif kept is not None and against:
            against[0] = (against[0][0], "the version it came from, the latest kept one")
    this = latest_run(version)
    out = []
    for other, why in against:
        base = latest_run(other)
        verdicts = paired_verdicts(base, this) if base and this else {}
        out.append(
            {
                "version": other,
                "why": why,
                "run_before": base,
                "run_after": this,
                "rate_before": stats.rate_words(base.passed or 0, base.checked or 0)
                if base
                else None,
                "rate_after": stats.rate_words(this.passed or 0, this.checked or 0)
                if this
                else None,
                "overall": verdicts.get("overall"),
                "questions": [(qid, p) for qid, p in verdicts.items() if qid != "overall"],
            }
        )
    return out


# --- labelling ---------------------------------------------------------------------------------


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
        if spec.validate(version.document, limits=settings.DECISIONS_LIMITS).valid:
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


def state_records(question_set: QuestionSet):
    """The set's sample states as import records, by name, read in chunks (for an export)."""
    rows = question_set.sample_states.order_by("name").values_list(
        "name", "state_text", "expected", "tags"
    )
    for name, text, expected, tags in rows.iterator(chunk_size=500):
        yield state_files.record(name, spec.loads(text), expected or {}, tags or [])
