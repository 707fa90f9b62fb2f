"""The comparison grid: columns (a batch run, or a version asked through a backend), rows (the
questions, for one sample state or for every state of the set), cells marked against the first
column. The whole selection is a query string, so a link reproduces the view. Its downloads and
its text for a terminal are `comparison_formats`'s."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Exists, F, OuterRef, QuerySet

from questions import roles, services
from questions.core import check, controls, metrics, spec
from questions.core.answers import NOUL_THRESHOLD
from questions.core.numbers import whole_number
from questions.engine import backends
from questions.models import (
    BatchItem,
    BatchRun,
    Label,
    QuestionSet,
    SampleState,
    SampleStateRevision,
    Version,
)
from questions.selectors import control_reports, runs
from questions.services.errors import model_name

COLUMN = re.compile(
    r"\A(?:run:(?P<run>[0-9]{1,18})"
    r"|v(?P<version>[0-9]{1,9}):(?P<backend>[a-z]{1,20}(?::[a-z]{1,20})?))\Z"
)
#: the command line (`questions compare`) asks live columns itself: at most this many per call
MAX_LIVE_COLUMNS = 3
FILTERS = ("all", "changes", "failures")


#: rows come a page of states at a time (htmx appends the next page as the table scrolls)
PAGE_STATES = 50
#: the downloads read this many states' answers at a time, so their memory stays constant
CHUNK_STATES = 200
#: a cell draws at most this many probability bars (the rest summed into the last)
MAX_BARS = 8
#: a cell lists at most this many options' moves against the baseline, largest first
MAX_MOVES = 3


@dataclass
class Column:
    key: str  # as in the URL: run:12, v3:typesafe, v3:recorded or v3:recorded:openrouter
    label: str
    questions: dict[str, spec.Question] = field(default_factory=dict)
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)  # state id → answers
    problem: str = ""
    run_id: int | None = None  # a run's column
    run: BatchRun | None = None
    version: Version | None = None  # a version's column, asked through `backend`
    backend: str = ""
    calibrated: bool = True  # False: a chat model's stated probabilities (the llm wire)
    #: a live column read from what its wire recorded (the page never asks on a GET): the
    #: replay's backend name, e.g. `recorded` for typesafe
    replay: str = ""
    askable: bool = False  # this person may ask it now, for this one state (a POST)
    hint: str = ""  # why it cannot be asked from here, when it cannot

    def mark(self, backend: str) -> None:
        """Mark the column uncalibrated when its backend is (the label says so too)."""
        self.calibrated = backends.calibrated(backend)
        if not self.calibrated:
            self.label += " · calibrated: false"


@dataclass
class Cell:
    answer: dict[str, Any] | None
    flipped: bool = False
    distance: float | None = None
    #: each option's move against the baseline cell (`metrics.option_deltas`), largest first
    deltas: dict[str, float] | None = None
    passed: bool | None = None  # against the state's expected answer
    note: str = ""
    noise: bool = False  # a flip within the repeatability control's noise floor

    @property
    def moves(self) -> list[str]:
        """The options that moved, as the cell shows them (`billing +0.30`), largest first: at
        most MAX_MOVES, then how many more moved."""
        moved = [(k, d) for k, d in (self.deltas or {}).items() if d]
        shown = [f"{k} {'+' if d > 0 else '−'}{abs(d):.2f}" for k, d in moved[:MAX_MOVES]]
        if len(moved) > MAX_MOVES:
            shown.append(f"{len(moved) - MAX_MOVES} more moved")
        return shown

    @property
    def bars(self) -> list[tuple[str, str]]:
        """The answer's probabilities as bars in declared order, (title, height in twentieths:
        the stylesheet's class b0…b20, as the content security policy allows no inline style),
        at most MAX_BARS: past that, the likeliest options and one bar for all the others."""
        if not self.answer:
            return []
        probabilities = self.answer.get("probabilities")
        if not probabilities:
            noul = self.answer.get("noul")
            return [(f"P(true) {noul}", _step(noul))] if isinstance(noul, int | float) else []
        bars = list(probabilities.items())
        if len(bars) > MAX_BARS:
            kept = set(sorted(probabilities, key=probabilities.get, reverse=True)[: MAX_BARS - 1])
            rest = sum(p for k, p in bars if k not in kept)
            bars = [(k, p) for k, p in bars if k in kept]
            bars.append((f"{len(probabilities) - len(kept)} others", round(rest, 6)))
        return [(f"{k} {p}", _step(p)) for k, p in bars]


def _step(p: Any) -> str:
    """A height in twentieths (0…20), as text (a template would localize a number, 900 times)."""
    return str(min(20, max(0, round(float(p) * 20)))) if isinstance(p, int | float) else "0"


@dataclass
class Row:
    state: SampleState
    question: str
    qtype: str
    expected: Any
    cells: list[Cell]

    @property
    def changed(self) -> bool:
        return any(c.flipped for c in self.cells[1:])

    @property
    def failed(self) -> bool:
        return any(c.passed is False for c in self.cells)


@dataclass
class Selection:
    columns: list[str]
    state: str = "all"  # a sample state id, or "all"
    filter: str = "all"
    threshold: float = NOUL_THRESHOLD
    start: int = 0  # the page: the index of its first state in name order
    errors: list[str] = field(default_factory=list)
    next_start: int | None = None  # where the next page starts; None on the last page
    shown: int = 0  # states on this page
    total: int = 0  # states in the selection
    #: the repeatability control flips are read against (`control_reports.noise_floor`)
    noise: controls.NoiseFloor | None = None

    @classmethod
    def read(
        cls,
        question_set: QuestionSet,
        *,
        columns: Iterable[str] = (),
        state: str = "all",
        filter: str = "all",
        threshold: str | None = None,
        start: str = "0",
    ) -> Selection:
        """The selection a page names (its query string's values, parsed by the view): what
        does not read is replaced by its default and said in `errors`. No columns: the set's
        newest two plain runs, the baseline first (`default_columns`)."""
        selection = cls(columns=[c for c in columns if c.strip()])
        selection.state = state or "all"
        selection.filter = filter
        if selection.filter not in FILTERS:
            selection.errors.append(f"Unknown filter {selection.filter!r}; showing all.")
            selection.filter = "all"
        try:
            selection.threshold = NOUL_THRESHOLD if threshold is None else float(threshold)
            if not 0 < selection.threshold < 1:
                raise ValueError
        except ValueError:
            selection.errors.append(
                f"The threshold lies strictly between 0 and 1; using {NOUL_THRESHOLD}."
            )
            selection.threshold = NOUL_THRESHOLD
        first = whole_number(start, digits=9)
        if first is None:
            selection.errors.append("The page starts at a whole number of states; from the first.")
        selection.start = first or 0
        if not selection.columns:
            selection.columns = default_columns(question_set)
        return selection

    def with_baseline(self, key: str) -> str:
        """The query of this selection with column `key` first: the baseline every other
        column is read against (what a column's "make it the baseline" link opens)."""
        return self.query(columns=[key, *(k for k in self.columns if k != key)])

    def without(self, key: str) -> str:
        """The query of this selection with column `key` removed."""
        return self.query(columns=[k for k in self.columns if k != key])

    def query(self, **changes: Any) -> str:
        """The query string of this selection, with some parts changed (from the first page,
        unless `start` is given)."""
        params = [("col", c) for c in changes.get("columns", self.columns)]
        state = changes.get("state", self.state)
        if state is not None:
            params.append(("state", state))
        params.append(("filter", changes.get("filter", self.filter)))
        params.append(("threshold", str(changes.get("threshold", self.threshold))))
        if changes.get("start"):
            params.append(("start", str(changes["start"])))
        if state is None:  # the query of one state: state= comes last, to be appended
            return urlencode(params) + "&state="
        return urlencode(params)


def default_columns(question_set: QuestionSet) -> list[str]:
    """The columns of a comparison that names none: the set's newest plain run (not a
    control's) against the newest run of the version under `production` when that is another
    version, else against the run before it — the baseline first: production's run, else the
    older version's (of one version, the older run) — so the verdict reads "is the newer
    version better than the one it would replace?"."""
    plain = question_set.batch_runs.filter(kind=BatchRun.PLAIN).order_by("-id")
    fields = ("pk", "version_id", "version__number")
    newest = list(plain.values_list(*fields)[:2])
    production = (
        question_set.labels.filter(name=Label.BASELINE).values_list("version_id", flat=True).first()
    )
    if newest and production is not None and newest[0][1] != production:
        live = plain.filter(version_id=production).values_list(*fields).first()
        newest = [newest[0], live] if live else newest
    newest.sort(key=lambda run: (run[1] != production, run[2], run[0]))
    return [f"run:{pk}" for pk, _, _ in newest]


def _parsed(document: Any) -> dict[str, spec.Question] | None:
    """The questions of a stored document under the configured limits; None when invalid."""
    result = check.validate(document, limits=settings.DECISIONS_LIMITS, lints=False)
    return result.document.questions if result.document else None


def _open_column(
    key: str,
    question_set: QuestionSet,
    user,
    single: bool,
    live_budget: list[int],
    ask_live: bool = False,
) -> Column:
    """A column with its questions, or with the problem that keeps it empty; no answers yet.
    A live column is asked now only when `ask_live` (the command line); otherwise it shows what
    its wire recorded for these questions, and says whether `user` may ask it (`ask_column`)."""
    match = COLUMN.match(key)
    if not match:
        return Column(key, key, problem=f"Unknown column {key!r}: use run:N or vN:backend.")
    if match["run"]:
        run = (
            BatchRun.objects.filter(pk=int(match["run"]), question_set=question_set)
            .select_related("version")
            .first()
        )
        if run is None:
            return Column(key, key, problem=f"{question_set.slug} has no run {match['run']}.")
        column = Column(key, f"run {run.pk} · v{run.version.number} · {run.backend}")
        column.mark(run.backend)
        column.questions = _parsed(run.version.document) or {}
        column.run_id, column.run = run.pk, run
        return column
    version = question_set.versions.filter(number=int(match["version"])).first()
    backend = match["backend"]
    if version is None:
        return Column(key, key, problem=f"{question_set.slug} has no version {match['version']}.")
    column = Column(key, f"v{version.number} · {backend}")
    column.mark(backend)
    questions = _parsed(version.document)
    if questions is None:
        column.problem = "This version's document is invalid: nothing to ask."
        return column
    column.questions = questions
    try:
        live = backends.get(backend).live
    except backends.DecisionError as exc:
        column.problem = f"{exc.status}: {exc.detail}"
        return column
    if live and not ask_live:  # a page: read the recordings; asking is a POST (`ask_column`)
        column.version, column.backend = version, backend
        column.replay = backends.RecordedBackend(backend).name
        if not roles.may_ask_live(user, question_set):
            column.hint = services.LIVE_ASKERS_ONLY
        elif not single:
            column.hint = "Pick one state to ask it live (one call, recorded)."
        else:
            column.askable = True
        return column
    if live and not roles.may_ask_live(user, question_set):
        column.problem = services.LIVE_ASKERS_ONLY
        return column
    if live and not single:
        column.problem = (
            "A live backend answers one state at a time here; pick a state, or "
            "start a batch run and compare the run."
        )
        return column
    if live:
        if live_budget[0] <= 0:
            column.problem = (
                f"At most {MAX_LIVE_COLUMNS} live columns are asked per page; compare batch runs "
                "for more."
            )
            return column
        live_budget[0] -= 1
    column.version, column.backend = version, backend
    return column


def _fill(column: Column, states: list[SampleState] | None, user) -> None:
    """Load a column's answers for `states` (None: every state), replacing those it held."""
    column.answers = {}
    if column.run_id is not None:
        items = BatchItem.objects.filter(
            run_id=column.run_id, status=BatchItem.Status.ANSWERED, variant=0
        )  # a control's real calls
        if states is not None:
            items = items.filter(sample_state__sample_state_id__in=[s.pk for s in states])
        for state_id, answers in items.values_list("sample_state__sample_state_id", "answers"):
            column.answers[state_id] = answers or {}
        return
    if column.version is None:
        return  # a column with a problem
    chosen = backends.get(column.replay or column.backend)
    if chosen.live:  # the command line, one state (see _open_column): asked now, and recorded
        for state in SampleState.objects.filter(pk__in=[s.pk for s in states or []]):
            _answered(
                column,
                state.pk,
                services.decision_ask(
                    backend=column.backend,
                    questions=column.questions,
                    state=state.state,
                    user=user,
                    version=column.version,
                ),
            )
        return
    # a replay: every state's recorded answers in one query, by the hash of its current content
    revisions = SampleStateRevision.objects.filter(revision=F("sample_state__revision"))
    if states is not None:
        revisions = revisions.filter(sample_state_id__in=[s.pk for s in states])
    else:
        revisions = revisions.filter(sample_state__question_set_id=column.version.question_set_id)
    sha_of = dict(revisions.values_list("sample_state_id", "state_sha256"))
    outcomes = chosen.ask_many(
        column.questions, set(sha_of.values()), model_name(chosen.default_model())
    )
    for state_id, sha in sha_of.items():
        _answered(column, state_id, outcomes[sha])


def _answered(column: Column, state_id: int, outcome: backends.Outcome) -> None:
    if outcome.checked:
        column.answers[state_id] = outcome.checked.answers
    elif outcome.error and outcome.error.status != 404:
        column.problem = f"{outcome.error.status}: {outcome.error.detail}"


def states_of(question_set: QuestionSet, selection: Selection) -> QuerySet[SampleState]:
    """The selection's states in name order: names and expected answers, not their contents."""
    states = question_set.sample_states.order_by("name").only(
        "pk", "name", "expected", "question_set_id"
    )
    if selection.state != "all":
        pk = whole_number(selection.state)
        states = states.filter(pk=pk) if pk is not None else states.none()
    return states


def _open(
    question_set: QuestionSet, selection: Selection, user, ask_live: bool = False
) -> tuple[QuerySet[SampleState], list[Column]]:
    states = states_of(question_set, selection)
    selection.total = states.count()
    if selection.state != "all" and not selection.total:
        selection.errors.append(f"{question_set.slug} has no sample state {selection.state}.")
    live_budget = [MAX_LIVE_COLUMNS]
    single = selection.total == 1
    columns = [
        _open_column(key, question_set, user, single, live_budget, ask_live)
        for key in selection.columns
    ]
    versions = [c.run.version if c.run else c.version for c in columns]
    selection.noise = control_reports.noise_floor(question_set, versions) if columns else None
    return states, columns


def ask_column(question_set: QuestionSet, selection: Selection, key: str, user) -> backends.Outcome:
    """Ask a live column of the selection (`vN:backend`) about its one state, now, and record
    the answer (`services.decision_ask`): what the page's "Ask now" does, on a POST. The page
    then reads the recording. `Invalid`/`NotFound` when the column or the state is not one to
    ask; `NotAllowed` when `user` may not ask a live backend."""
    if key not in selection.columns:
        raise services.Invalid(f"{key[:40]!r} is not a column of this comparison.")
    states, columns = _open(question_set, selection, user)
    column = columns[selection.columns.index(key)]
    if column.problem:
        raise services.Invalid(column.problem)
    if not column.replay:
        raise services.Invalid(f"{key} is not a live column: it reads what was recorded.")
    if selection.total != 1:
        raise services.Invalid(column.hint or "Pick one state to ask a live column.")
    state = SampleState.objects.get(pk=states.get().pk)
    return services.decision_ask(
        backend=column.backend,
        questions=column.questions,
        state=state.state,
        user=user,
        version=column.version,
        sample_state=state.current_revision(),
    )


def _question_ids(columns: list[Column]) -> list[str]:
    qids: list[str] = []
    for column in columns:
        qids.extend(q for q in column.questions if q not in qids)
    return qids


def _state_rows(
    state: SampleState, columns: list[Column], qids: list[str], selection: Selection
) -> list[Row]:
    """One state's rows (one per question), those the filter keeps."""
    rows = []
    for qid in qids:
        qtype = next((c.questions[qid].type for c in columns if qid in c.questions), "")
        expected = (state.expected or {}).get(qid)
        cells = []
        base = columns[0].answers.get(state.pk, {}).get(qid)
        for i, column in enumerate(columns):
            answer = column.answers.get(state.pk, {}).get(qid)
            cell = Cell(answer)
            if answer is None:
                cell.note = (
                    "not asked"
                    if qid not in column.questions
                    else "not asked yet"
                    if column.replay
                    else "no answer"
                )
            else:
                # each answer is read as its own column's type: a question may have changed
                # type between the columns' versions (a noul in v1, a score in v2)
                atype = answer.get("type", qtype)
                if i and base is not None and base.get("type") == atype:
                    cell.flipped = metrics.flipped(atype, base, answer, selection.threshold)
                    cell.distance = metrics.distance(atype, base, answer)
                    cell.deltas = metrics.option_deltas(atype, base, answer)
                    noise = selection.noise
                    cell.noise = cell.flipped and bool(noise and noise.within(qid, cell.distance))
                elif i and base is not None:
                    cell.flipped = True  # another type of answer is a change, with no distance
                if expected is not None and metrics.expected_fits(atype, expected):
                    cell.passed = metrics.passes(atype, answer, expected, selection.threshold)
            cells.append(cell)
        row = Row(state, qid, qtype, expected, cells)
        if selection.filter == "changes" and not row.changed:
            continue
        if selection.filter == "failures" and not row.failed:
            continue
        rows.append(row)
    return rows


def build(
    question_set: QuestionSet, selection: Selection, user=None
) -> tuple[list[Column], list[Row]]:
    """One page of the grid: the rows of up to PAGE_STATES states from `selection.start` (with a
    filter, states that have a row to show), their answers loaded for the states read only.
    A read: a live column shows what its wire recorded, and nothing is asked or written."""
    states, columns = _open(question_set, selection, user)
    if not columns:
        return columns, []
    qids = _question_ids(columns)
    start = selection.start
    rows: list[Row] = []
    if selection.filter == "all":
        page = list(states[start : start + PAGE_STATES])
        for column in columns:
            _fill(column, page, user)
        for state in page:
            rows.extend(_state_rows(state, columns, qids, selection))
        selection.shown = len(page)
        end = start + len(page)
        selection.next_start = end if end < selection.total else None
        return columns, rows
    # a filter shows only states with a moved or failed answer: the states from `start` are
    # read in chunks (a page's worth, then twice as many each time, so a sparse filter costs a
    # few queries a column, not one a page) until the page is full and the next state is known;
    # "changes only" between runs reads only the states the database finds deciding otherwise
    moved = _moved(states, columns, selection)
    for chunk, first in _chunks(states, moved, start):
        for column in columns:
            _fill(column, chunk, user)
        for index, state in enumerate(chunk):
            found = _state_rows(state, columns, qids, selection)
            if found and selection.shown == PAGE_STATES:
                selection.next_start = _position(states, state) if first is None else first + index
                return columns, rows
            if found:
                rows.extend(found)
                selection.shown += 1
    return columns, rows


def _chunks(
    states: QuerySet[SampleState], moved: QuerySet[SampleState] | None, start: int
) -> Iterator[tuple[list[SampleState], int | None]]:
    """The states a filter reads from the `start`-th on, a chunk at a time (PAGE_STATES + 1,
    then twice as many each time: a full page also knows where the next starts), each with the
    position of its first state; with `moved`, only those, each chunk read when it is needed
    (a position None: it is looked up when needed, `_position`)."""
    size = PAGE_STATES + 1
    if moved is None:
        remaining, offset = list(states[start:]), 0
        while offset < len(remaining):
            yield remaining[offset : offset + size], start + offset
            offset, size = offset + size, size * 2
        return
    if start:
        names = list(states.values_list("name", flat=True)[start : start + 1])
        if not names:
            return
        moved = moved.filter(name__gte=names[0])
    offset = 0
    while chunk := list(moved[offset : offset + size]):
        yield chunk, None
        if len(chunk) < size:
            return  # the last: asking for more would look through every state again
        offset, size = offset + size, size * 2


def _moved(
    states: QuerySet[SampleState], columns: list[Column], selection: Selection
) -> QuerySet[SampleState] | None:
    """For "changes only" between runs, the states of `states` whose answers may have flipped:
    those where a later column's item decides otherwise than the first column's
    (`BatchItem.decided`, worked out at the default threshold; one not worked out counts as
    moved), found by the database without reading an answer. `_state_rows` then tells which
    really did, so the rows are those of reading every state. None when the database cannot
    tell: a column reads recordings, or another threshold is chosen."""
    if selection.filter != "changes" or selection.threshold != NOUL_THRESHOLD:
        return None
    if columns[0].run_id is None or any(c.run_id is None and c.version for c in columns):
        return None  # a version's column reads what its wire recorded, not a run's items
    first = columns[0].run_id
    later = [c.run_id for c in columns[1:] if c.run_id is not None and c.run_id != first]
    if not later:
        return states.none()
    moves = runs.recorded_moves(first, later)
    if moves is not None:  # recorded when the later run of each pair finished
        return states.filter(pk__in=moves.values("state_id"))
    return states.filter(Exists(runs.decides_otherwise(first, later, state=OuterRef("pk"))))


def _position(states: QuerySet[SampleState], state: SampleState) -> int:
    """Where `state` comes in `states` (name order)."""
    return states.filter(name__lt=state.name).count()


def stream(
    question_set: QuestionSet, selection: Selection, user=None, *, ask_live: bool = False
) -> tuple[list[Column], Iterator[Row]]:
    """Every row of the selection, read CHUNK_STATES states at a time (constant memory). Live
    columns are asked (and recorded) only with `ask_live` — the command line's compare, one
    state at a time; otherwise they read what their wire recorded."""
    states, columns = _open(question_set, selection, user, ask_live)
    qids = _question_ids(columns)

    def rows() -> Iterator[Row]:
        if not columns:
            return
        after = None
        while True:
            chunk = states if after is None else states.filter(name__gt=after)
            chunk = list(chunk[:CHUNK_STATES])
            if not chunk:
                return
            for column in columns:
                _fill(column, chunk, user)
            for state in chunk:
                yield from _state_rows(state, columns, qids, selection)
            after = chunk[-1].name

    return columns, rows()
