"""The comparison grid's other forms: each run column's evidence (its pass rate and paired
verdicts against the first column), the JSON and CSV downloads (streamed), and the text a
terminal shows (`questions compare`)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from questions.core import controls, metrics, stats
from questions.selectors import runs
from questions.selectors.comparison import Column, Row, Selection
from questions.selectors.disputes import ambiguous_left_out


@dataclass
class RunEvidence(stats.Rated):
    """A run column's pass rate (its stored summary) and, past the first column, its paired
    verdicts against the first column's run on the states both checked."""

    column: Column
    checked: int
    passed: int
    paired: dict[str, stats.Paired] | None = None  # "overall" and per question
    noise: controls.NoiseFloor | None = None
    left_out: int = 0  # question–state pairs marked ambiguous: no pass rate counts them

    @property
    def overall(self) -> stats.Paired | None:
        return self.paired["overall"] if self.paired else None

    @property
    def per_question(self) -> list[tuple[str, stats.Paired, float | None]]:
        """(question, its paired verdict, how often the same call flipped it on its own)."""
        noise = self.noise.flip_rates if self.noise else {}
        return [
            (qid, verdict, noise.get(qid))
            for qid, verdict in (self.paired or {}).items()
            if qid != "overall"
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "passed": self.passed,
            "pass_rate": self.passed / self.checked if self.checked else None,
            "pass_rate_interval": stats.interval_list(self.passed, self.checked),
            "paired": {k: v.as_dict() for k, v in self.paired.items()} if self.paired else None,
        }


def evidence(columns: list[Column], noise: controls.NoiseFloor | None = None) -> list[RunEvidence]:
    """Each run column's overall pass rate with its interval (`runs.overall`), and each later
    run column's paired verdicts (McNemar's exact test and the change with its paired
    interval, `runs.paired_verdicts`) against the first column's run, the baseline. A read:
    two finished runs' verdicts are cached."""
    base = columns[0].run if columns else None
    found = []
    left_out = ambiguous_left_out([c.run.pk for c in columns if c.run is not None])
    for i, column in enumerate(columns):
        figure = runs.overall(column.run)
        if figure is None:
            continue
        paired = runs.paired_verdicts(base, column.run) if i and base is not None else None
        ambiguous = left_out.get(column.run.pk, 0)
        found.append(RunEvidence(column, figure.checked, figure.passed, paired, noise, ambiguous))
    return found


def _summary(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return ""
    if answer["type"] == "choice":
        return f"{answer['choice']} ({answer['probabilities'][answer['choice']]:.2f})"
    if answer["type"] == "score":
        return _Figure(f"{answer['score']:.2f}")
    return _Figure(f"{answer['noul']:.2f}")


def _row_json(r: Row) -> dict[str, Any]:
    return {
        "state": r.state.name,
        "question": r.question,
        "type": r.qtype,
        "expected": r.expected,
        "cells": [
            {
                "answer": c.answer,
                "flipped": c.flipped,
                "distance": c.distance,
                "option_deltas": c.deltas,
                "passed": c.passed,
                "noise": c.noise,
            }
            for c in r.cells
        ],
    }


def json_chunks(columns: list[Column], rows: Iterable[Row], selection: Selection) -> Iterator[str]:
    """The JSON download, piece by piece: the same text as one `json.dumps(indent=2)` of it.
    Each run column carries its pass rate with its interval; `paired` is the second column's
    paired verdicts against the first (both runs), and `noise_floor` the repeatability control
    flips are read against (a cell's `noise`)."""
    found = {e.column.key: e for e in evidence(columns)}
    second = found.get(columns[1].key) if len(columns) > 1 else None
    head = json.dumps(
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
                | (found[c.key].as_json() if c.key in found else {})
                for c in columns
            ],
            "paired": second.as_json()["paired"] if second else None,
            "noise_floor": selection.noise.as_json() if selection.noise else None,
            "rows": [],
        },
        ensure_ascii=False,
        indent=2,
    )
    assert head.endswith("[]\n}")
    opened = False
    for r in rows:
        text = json.dumps(_row_json(r), ensure_ascii=False, indent=2).replace("\n", "\n    ")
        yield (",\n    " if opened else head[:-4] + "[\n    ") + text
        opened = True
    yield "\n  ]\n}" if opened else head


def as_json(columns: list[Column], rows: Iterable[Row], selection: Selection) -> str:
    return "".join(json_chunks(columns, rows, selection))


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


class _Line:
    """A file-like that hands back what csv.writer wrote to it."""

    def write(self, text: str) -> str:
        return text


def csv_lines(columns: list[Column], rows: Iterable[Row]) -> Iterator[str]:
    """The CSV download, a line at a time."""
    writer = csv.writer(_Line())
    header = ["state", "question", "type", "expected"]
    for c in columns:
        answer = f"{c.key} answer" + ("" if c.calibrated else " (calibrated: false)")
        header += [answer, f"{c.key} flipped", f"{c.key} distance", f"{c.key} passed"]
    yield writer.writerow([_cell(h) for h in header])
    for r in rows:
        line = [r.state.name, r.question, r.qtype, _truth(r.expected)]
        for cell in r.cells:
            line += [
                _summary(cell.answer),
                "" if cell.answer is None else _truth(cell.flipped),  # no answer, no flip
                "" if cell.distance is None else _Figure(f"{cell.distance:.4f}"),
                _truth(cell.passed),
            ]
        yield writer.writerow([_cell(v) for v in line])


def _truth(value: Any) -> Any:
    """A CSV value as the contract writes it: `true` / `false` (not Python's True / False), and
    nothing for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return _Figure("true" if value else "false")
    return value


def as_csv(columns: list[Column], rows: Iterable[Row]) -> str:
    return "".join(csv_lines(columns, rows))


def _paired_text(paired: stats.Paired) -> str:
    """A paired verdict for a terminal: the change with its interval, then the verdict."""
    change = paired.difference_words()
    return f"{change} — {paired.words()}" if change else paired.words()


def as_text(
    columns: list[Column], rows: list[Row], noise: controls.NoiseFloor | None = None
) -> str:
    """The grid for a terminal (`questions compare`): the columns (a run's with its overall
    pass rate and, past the first, its change and paired verdict against the first), then one
    line per state and question with each column's answer, `*` and the distance where it
    moved from the first (`~` when within the repeatability control's noise floor), the
    options that moved (largest first), and ✓/✗ against the expected answer."""
    found = {e.column.key: e for e in evidence(columns, noise)}
    lines = []
    for i, c in enumerate(columns, 1):
        e = found.get(c.key)
        lines.append(f"[{i}] {c.label}" + (f": overall {e.words}" if e else ""))
        if e and e.overall:
            lines.append(f"    against [1], overall: {_paired_text(e.overall)}")
            lines.extend(
                f"    {qid}: {_paired_text(verdict)}" for qid, verdict, _ in e.per_question
            )
    if noise:
        lines.append(f"~ a flip within the noise floor of repeatability run {noise.run_id}")
    for r in rows:
        cells = []
        for i, cell in enumerate(r.cells, 1):
            if cell.answer is None:
                shown = cell.note
            else:
                shown = str(_summary(cell.answer))
                if cell.flipped:
                    shown += f" *{cell.distance:.2f}" if cell.distance is not None else " *"
                    shown += "~" if cell.noise else ""
                if cell.moves:
                    shown += f" ({', '.join(cell.moves)})"
                if cell.passed is not None:
                    shown += " ✓" if cell.passed else " ✗"
            cells.append(f"[{i}] {shown}")
        expected = "" if r.expected is None else f" (expected {metrics.expected_text(r.expected)})"
        lines.append(f"{r.state.name} · {r.question}{expected}: " + " | ".join(cells))
    if not rows:
        lines.append("nothing to compare")
    return "\n".join(lines)
