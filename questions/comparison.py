"""The comparison grid: columns (a batch run, or a version asked through a backend), rows (the
questions, for one sample state or for every state of the set), cells marked against the first
column. The whole selection is a query string, so a link reproduces the view."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import QueryDict

from questions import backends, metrics, roles, services, spec
from questions.models import BatchItem, BatchRun, QuestionSet, SampleState

COLUMN = re.compile(
    r"\A(?:run:(?P<run>[0-9]{1,18})"
    r"|v(?P<version>[0-9]{1,9}):(?P<backend>[a-z]{1,20}(?::[a-z]{1,20})?))\Z"
)
#: live columns ask the provider once per column on every view: a page asks at most this many
MAX_LIVE_COLUMNS = 3
FILTERS = ("all", "changes", "failures")


@dataclass
class Column:
    key: str  # as in the URL: run:12, v3:typesafe, v3:recorded or v3:recorded:openrouter
    label: str
    questions: dict[str, spec.Question] = field(default_factory=dict)
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)  # state id → answers
    problem: str = ""
    calibrated: bool = True  # False: a chat model's stated probabilities (the llm wire)

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
    passed: bool | None = None  # against the state's expected answer
    note: str = ""


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
    threshold: float = 0.5
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, query: QueryDict, question_set: QuestionSet) -> Selection:
        selection = cls(columns=[c for c in query.getlist("col") if c.strip()])
        selection.state = query.get("state", "all") or "all"
        selection.filter = query.get("filter", "all")
        if selection.filter not in FILTERS:
            selection.errors.append(f"Unknown filter {selection.filter!r}; showing all.")
            selection.filter = "all"
        try:
            selection.threshold = float(query.get("threshold", 0.5))
            if not 0 < selection.threshold < 1:
                raise ValueError
        except ValueError:
            selection.errors.append("The threshold lies strictly between 0 and 1; using 0.5.")
            selection.threshold = 0.5
        if not selection.columns:
            runs = list(question_set.batch_runs.order_by("-id").values_list("pk", flat=True)[:2])
            selection.columns = [f"run:{pk}" for pk in reversed(runs)]
        return selection

    def query(self, **changes: Any) -> str:
        """The query string of this selection, with some parts changed."""
        params = QueryDict(mutable=True)
        params.setlist("col", changes.get("columns", self.columns))
        params["state"] = changes.get("state", self.state)
        params["filter"] = changes.get("filter", self.filter)
        params["threshold"] = str(changes.get("threshold", self.threshold))
        return params.urlencode()


def _parsed(document: Any) -> dict[str, spec.Question] | None:
    """The questions of a stored document under the configured limits; None when invalid."""
    result = spec.validate(document, limits=settings.DECISIONS_LIMITS, lints=False)
    return result.document.questions if result.document else None


def _load_column(
    key: str, question_set: QuestionSet, states: list[SampleState], user, live_budget: list[int]
) -> Column:
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
        for item in run.items.filter(status=BatchItem.Status.ANSWERED).select_related(
            "sample_state"
        ):
            column.answers[item.sample_state.sample_state_id] = item.answers or {}
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
    live = backend in backends.NAMES and backends.get(backend).live
    if live and not roles.may_ask_live(user):
        column.problem = services.LIVE_ASKERS_ONLY
        return column
    if live and len(states) > 1:
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
    for state in states:
        outcome = services.decision_ask(
            backend=backend,
            questions=questions,
            state=state.state,
            user=user,
            version=version,
        )
        if outcome.checked:
            column.answers[state.pk] = outcome.checked.answers
        elif outcome.error and outcome.error.status != 404:
            column.problem = f"{outcome.error.status}: {outcome.error.detail}"
    return column


def build(
    question_set: QuestionSet, selection: Selection, user=None
) -> tuple[list[Column], list[Row]]:
    states = list(question_set.sample_states.order_by("name"))
    if selection.state != "all":
        states = [s for s in states if str(s.pk) == selection.state]
        if not states:
            selection.errors.append(f"{question_set.slug} has no sample state {selection.state}.")
    live_budget = [MAX_LIVE_COLUMNS]
    columns = [
        _load_column(key, question_set, states, user, live_budget) for key in selection.columns
    ]
    if not columns:
        return columns, []
    qids: list[str] = []
    for column in columns:
        qids.extend(q for q in column.questions if q not in qids)
    rows = []
    for state in states:
        for qid in qids:
            qtype = next((c.questions[qid].type for c in columns if qid in c.questions), "")
            expected = (state.expected or {}).get(qid)
            cells = []
            base = columns[0].answers.get(state.pk, {}).get(qid)
            for i, column in enumerate(columns):
                answer = column.answers.get(state.pk, {}).get(qid)
                cell = Cell(answer)
                if answer is None:
                    cell.note = "not asked" if qid not in column.questions else "no answer"
                else:
                    if i and base is not None and base.get("type") == answer.get("type"):
                        cell.flipped = metrics.flipped(qtype, base, answer, selection.threshold)
                        cell.distance = metrics.distance(qtype, base, answer)
                    if expected is not None and metrics.expected_fits(qtype, expected):
                        cell.passed = metrics.passes(qtype, answer, expected, selection.threshold)
                cells.append(cell)
            row = Row(state, qid, qtype, expected, cells)
            if selection.filter == "changes" and not row.changed:
                continue
            if selection.filter == "failures" and not row.failed:
                continue
            rows.append(row)
    return columns, rows


def _summary(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return ""
    if answer["type"] == "choice":
        return f"{answer['choice']} ({answer['probabilities'][answer['choice']]:.2f})"
    if answer["type"] == "score":
        return _Figure(f"{answer['score']:.2f}")
    return _Figure(f"{answer['noul']:.2f}")


def as_json(columns: list[Column], rows: list[Row], selection: Selection) -> str:
    return json.dumps(
        {
            "selection": {
                "columns": selection.columns,
                "state": selection.state,
                "filter": selection.filter,
                "threshold": selection.threshold,
            },
            "columns": [
                {
                    "key": c.key,
                    "label": c.label,
                    "calibrated": c.calibrated,
                    "problem": c.problem or None,
                }
                for c in columns
            ],
            "rows": [
                {
                    "state": r.state.name,
                    "question": r.question,
                    "type": r.qtype,
                    "expected": r.expected,
                    "cells": [
                        {
                            "answer": c.answer,
                            "flipped": c.flipped,
                            "distance": c.distance,
                            "passed": c.passed,
                        }
                        for c in r.cells
                    ],
                }
                for r in rows
            ],
        },
        ensure_ascii=False,
        indent=2,
    )


#: a spreadsheet takes a cell starting with one of these for a formula (OWASP: CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class _Figure(str):
    """A number the console formatted itself, so never a formula: written as it is."""


def _cell(value: Any) -> Any:
    """Text a person wrote (names, ids, options, expected answers) that a spreadsheet would take
    for a formula gets a leading `'`, so it is shown as text; numbers and booleans stay."""
    if (
        isinstance(value, str)
        and not isinstance(value, _Figure)
        and value.startswith(FORMULA_STARTS)
    ):
        return "'" + value
    return value


def as_csv(columns: list[Column], rows: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["state", "question", "type", "expected"]
    for c in columns:
        answer = f"{c.key} answer" + ("" if c.calibrated else " (calibrated: false)")
        header += [answer, f"{c.key} flipped", f"{c.key} distance", f"{c.key} passed"]
    writer.writerow([_cell(h) for h in header])
    for r in rows:
        line = [r.state.name, r.question, r.qtype, "" if r.expected is None else r.expected]
        for cell in r.cells:
            line += [
                _summary(cell.answer),
                cell.flipped,
                "" if cell.distance is None else _Figure(f"{cell.distance:.4f}"),
                "" if cell.passed is None else cell.passed,
            ]
        writer.writerow([_cell(v) for v in line])
    return out.getvalue()


def as_text(columns: list[Column], rows: list[Row]) -> str:
    """The grid for a terminal (`questions compare`): the columns, then one line per state and
    question with each column's answer, `*` and the distance where it moved from the first,
    and ✓/✗ against the expected answer."""
    lines = [f"[{i}] {c.label}" for i, c in enumerate(columns, 1)]
    for r in rows:
        cells = []
        for i, cell in enumerate(r.cells, 1):
            if cell.answer is None:
                shown = cell.note
            else:
                shown = str(_summary(cell.answer))
                if cell.flipped:
                    shown += f" *{cell.distance:.2f}" if cell.distance is not None else " *"
                if cell.passed is not None:
                    shown += " ✓" if cell.passed else " ✗"
            cells.append(f"[{i}] {shown}")
        expected = "" if r.expected is None else f" (expected {r.expected})"
        lines.append(f"{r.state.name} · {r.question}{expected}: " + " | ".join(cells))
    if not rows:
        lines.append("nothing to compare")
    return "\n".join(lines)
