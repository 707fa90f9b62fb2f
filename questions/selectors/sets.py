"""The set list and a set's page: sets with their figures, pages of long lists, sample states,
versions, labels with their moves and fetch log, and the version a command names."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import (
    Count,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce

from questions.core import lints, spec, state_files
from questions.exports import exportable_version
from questions.models import (
    BatchItem,
    BatchRun,
    ExportFetch,
    Label,
    LabelMove,
    QuestionSet,
    SampleState,
    Version,
)
from questions.selectors.holdout import holdout_ids, holdout_mark
from questions.selectors.runs import FAILING_ITEM
from questions.selectors.teams import visible_sets


def question_sets(search: str = "", *, user: Any) -> QuerySet[QuestionSet]:
    """Sets with their newest version's number and status, the version under `production`,
    how many versions wait for review and the checked and passed pairs of the latest finished
    plain run that checked any — not a control's, a drift's or a gate's; a failed run checks
    nothing: the set list keeps the earlier figure — (`last_checked`, `last_passed`,
    `last_run_id`), last edited first; those whose slug, name or description holds `search`,
    when given; of the teams `user` reads only."""
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
    sets = (
        visible_sets(user)
        .select_related("owner", "team")
        .annotate(
            newest_number=Subquery(newest.values("number")[:1]),
            newest_status=Subquery(newest.values("status")[:1]),
            production_number=Subquery(production.values("version__number")[:1]),
            in_review=Coalesce(Subquery(waiting), 0),
            last_checked=Subquery(last_run.values("checked")[:1]),
            last_passed=Subquery(last_run.values("passed")[:1]),
            last_run_id=Subquery(last_run.values("pk")[:1]),
        )
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


def question_sets_page(search: str = "", start: int = 0, *, user: Any) -> Window:
    """A page of `question_sets(search, user=user)`; counted without the annotations."""
    sets = question_sets(search, user=user)
    plain = QuestionSet.objects.filter(pk__in=sets.values("pk")) if search.strip() else None
    total = (plain if plain is not None else visible_sets(user)).count()
    return window(sets, start, SETS_PAGE, total=total)


#: the sample states a set page can show: every one, those with expected answers, those with
#: none, those that missed an expected answer or failed in the set's last finished run, and
#: either side of the held-out split
HELD_OUT, TRAINING = "held_out", "training"
STATE_SHOWS = {
    "all": "every state",
    "labelled": "with expected answers",
    "unlabelled": "without expected answers",
    "failing": "failing in the last run",
    HELD_OUT: "held out for proofs",
    TRAINING: "left for drafting",
}


#: where the states a set page shows came from: anywhere, typed or uploaded, from production
STATE_SOURCES = {
    "": "any source",
    **{source.value: source.label for source in SampleState.Source},
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
    source: str = "",
    start: int = 0,
    failing_in: BatchRun | None = None,
) -> Window:
    """A page of a set's sample states, by name, without their contents (the size is worked
    out by the database): those whose name holds `name`, tagged `tag`, from `source` (when
    given: `STATE_SOURCES`), and as `show` picks (`STATE_SHOWS`; "failing": the states of run
    `failing_in` that missed an expected answer or got none; "held_out" and "training": the
    sides of the held-out split). Each state listed carries its `side`."""
    states = question_set.sample_states.only(
        "pk",
        "name",
        "tags",
        "expected",
        "revision",
        "updated_at",
        "question_set_id",
        "source",
        "observed_at",
    ).annotate(text_bytes=OctetLength("state_text"))
    if source:
        states = states.filter(source=source)
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
        if failing_in is not None and not (name.strip() or tag.strip() or source):
            # a run of the set asks each of its states once (`batch_create`: a state's current
            # revision), and a state a run asked is never deleted: one failing item is one
            # failing state, counted from the index of the items alone
            total = missed.count()
            found = window(states.order_by("name"), start, STATES_PAGE, total=total)
            holdout_mark(question_set, found.rows)
            return found
    elif show in (HELD_OUT, TRAINING):
        states = states.filter(pk__in=holdout_ids(question_set, held_out=show == HELD_OUT))
    # production's states are named by their content's hash: the newest answered first reads
    # better than their names' order (the index of source and time holds it)
    order = ("-observed_at", "-pk") if source == SampleState.Source.PRODUCTION else ("name",)
    found = window(states.order_by(*order), start, STATES_PAGE)
    holdout_mark(question_set, found.rows)  # which side of the held-out split each is on
    return found


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


def state_records(question_set: QuestionSet, *, source: str = ""):
    """The set's sample states (from `source` only, when given) as import records, by name,
    read in chunks (for an export)."""
    states = (
        question_set.sample_states.filter(source=source) if source else question_set.sample_states
    )
    rows = states.order_by("name").values_list("name", "state_text", "expected", "tags")
    for name, text, expected, tags in rows.iterator(chunk_size=500):
        yield state_files.record(name, spec.loads(text), expected or {}, tags or [])
