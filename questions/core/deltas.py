"""Two runs' answers set against each other (pure Python): the cells that moved (regressions
first) with the pass rates on the pairs both runs checked (`RunDelta`, and the form a stored
report keeps), and each question's checks per state in both runs, which the paired verdicts
read (`stats.paired`). What a flip, a distance and a pass are is `metrics`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from questions.core.answers import NOUL_THRESHOLD
from questions.core.metrics import Case, expected_fits, nearest_level, passes


@dataclass(frozen=True)
class Change:
    """One (state, question) cell whose answer moved or whose check changed between two runs."""

    state: str
    question: str
    qtype: str
    expected: Any
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    passed_before: bool | None  # None: not checked (no expected answer)
    passed_after: bool | None

    @property
    def kind(self) -> str:
        if self.passed_before and self.passed_after is False:
            return "regression"
        if self.passed_after and self.passed_before is False:
            return "fix"
        return "flip"


def _reading(qtype: str, answer: Mapping[str, Any], threshold: float) -> Any:
    """What an answer reads as: the option, the nearest level, or the side of the threshold."""
    if qtype == "choice":
        return answer["choice"]
    if qtype == "score":
        return nearest_level(float(answer["score"]))
    return float(answer["noul"]) >= threshold


@dataclass
class RunDelta:
    """Two runs over the states both answered: pass rates over the pairs checked in both, and
    every changed cell, regressions first, then fixes, then other flips."""

    checked: int
    passed_before: int
    passed_after: int
    changes: list[Change]
    changed: int | None = None  # how many cells changed, when `changes` lists only the first

    @property
    def rate_before(self) -> float | None:
        return self.passed_before / self.checked if self.checked else None

    @property
    def rate_after(self) -> float | None:
        return self.passed_after / self.checked if self.checked else None

    @property
    def delta(self) -> float | None:
        return (self.passed_after - self.passed_before) / self.checked if self.checked else None

    @property
    def points(self) -> str:
        """The change of pass rate in percentage points, signed, one decimal: `+2.5`, `-0.1`,
        `0.0`; "" with nothing checked in both."""
        if not self.checked:
            return ""
        points = round(100 * (self.passed_after - self.passed_before) / self.checked, 1)
        return f"{points:+.1f}" if points else "0.0"

    @property
    def flips(self) -> int:
        return len(self.changes) if self.changed is None else self.changed


def delta_as_json(delta: RunDelta, shown: int) -> dict[str, Any]:
    """A comparison as a finished run stores it: the counts and the first `shown` changes."""
    return {
        "checked": delta.checked,
        "passed_before": delta.passed_before,
        "passed_after": delta.passed_after,
        "changed": delta.flips,
        "shown": shown,
        "changes": [
            [
                c.state,
                c.question,
                c.qtype,
                c.expected,
                dict(c.before),
                dict(c.after),
                c.passed_before,
                c.passed_after,
            ]
            for c in delta.changes[:shown]
        ],
    }


def delta_from_json(data: Mapping[str, Any]) -> RunDelta:
    """The comparison `delta_as_json` stored (its first `data["shown"]` changes listed)."""
    return RunDelta(
        data["checked"],
        data["passed_before"],
        data["passed_after"],
        [Change(*c) for c in data["changes"]],
        changed=data["changed"],
    )


def compare_runs(
    before: Iterable[Case],
    after: Iterable[Case],
    threshold: float = NOUL_THRESHOLD,
    threshold_before: float | None = None,
) -> RunDelta:
    """What moved from run `before` to run `after` on the (state, question) cells both
    answered: a cell is listed when its answer flipped or its check changed. Each run reads
    its nouls at its own threshold (`threshold_before`, by default the same)."""
    t_before = threshold if threshold_before is None else threshold_before
    old = {(c.state, c.question): c for c in before}
    delta = RunDelta(0, 0, 0, [])
    for c in after:
        b = old.get((c.state, c.question))
        if b is None or b.qtype != c.qtype:
            continue
        ok_before = passes(c.qtype, b.answer, c.expected, t_before) if c.checked else None
        ok_after = passes(c.qtype, c.answer, c.expected, threshold) if c.checked else None
        if c.checked:
            delta.checked += 1
            delta.passed_before += ok_before
            delta.passed_after += ok_after
        if ok_before != ok_after or _reading(c.qtype, b.answer, t_before) != _reading(
            c.qtype, c.answer, threshold
        ):
            delta.changes.append(
                Change(
                    c.state,
                    c.question,
                    c.qtype,
                    c.expected,
                    b.answer,
                    c.answer,
                    ok_before,
                    ok_after,
                )
            )
    order = {"regression": 0, "fix": 1, "flip": 2}
    delta.changes.sort(key=lambda c: (order[c.kind], c.state, c.question))
    return delta


def compare_readings(
    before: Mapping[str, tuple[Mapping[str, Any], tuple]],
    after: Mapping[str, tuple[Mapping[str, Any], tuple]],
    qtypes: Mapping[str, str],
    threshold: float = NOUL_THRESHOLD,
    threshold_before: float | None = None,
) -> RunDelta:
    """`compare_runs` over two runs' readings without a `Case` per cell (a review compares
    12,000 cells at 2,000 states): `before` and `after` map a state's name to its expected
    answers and its readings — per question of `qtypes`, in order, the chosen option, the
    score or P(true), or None. The same rules, through `passes` and `_reading`."""
    t_before = threshold if threshold_before is None else threshold_before
    keys = list(qtypes.items())  # an answer's reading sits under its type's name
    delta = RunDelta(0, 0, 0, [])
    for state, (expected, values) in after.items():
        old = before.get(state)
        if old is None:
            continue
        expected = expected or {}
        for (qid, qtype), b, a in zip(keys, old[1], values, strict=True):
            if a is None or b is None:
                continue
            answer_b, answer_a = {qtype: b}, {qtype: a}
            wanted = expected.get(qid)
            checked = wanted is not None and expected_fits(qtype, wanted)
            ok_before = passes(qtype, answer_b, wanted, t_before) if checked else None
            ok_after = passes(qtype, answer_a, wanted, threshold) if checked else None
            if checked:
                delta.checked += 1
                delta.passed_before += ok_before
                delta.passed_after += ok_after
            if ok_before != ok_after or _reading(qtype, answer_b, t_before) != _reading(
                qtype, answer_a, threshold
            ):
                delta.changes.append(
                    Change(state, qid, qtype, wanted, answer_b, answer_a, ok_before, ok_after)
                )
    order = {"regression": 0, "fix": 1, "flip": 2}
    delta.changes.sort(key=lambda c: (order[c.kind], c.state, c.question))
    return delta


def paired_checks(
    before: Mapping[str, tuple[Mapping[str, Any] | None, tuple]],
    after: Mapping[str, tuple[Mapping[str, Any] | None, tuple]],
    qtypes: Mapping[str, str],
    threshold: float = NOUL_THRESHOLD,
    threshold_before: float | None = None,
) -> dict[str, dict[str, tuple[bool, bool]]]:
    """Per question of `qtypes`, per state both runs answered and checked against the state's
    expected answer: (passed before, passed after) — what a paired test reads (`stats.paired`).
    The readings are `compare_readings`'; each run reads its nouls at its own threshold."""
    t_before = threshold if threshold_before is None else threshold_before
    keys = list(qtypes.items())
    found: dict[str, dict[str, tuple[bool, bool]]] = {qid: {} for qid in qtypes}
    for state, (expected, values) in after.items():
        old = before.get(state)
        if old is None:
            continue
        expected = expected or {}
        for (qid, qtype), b, a in zip(keys, old[1], values, strict=True):
            wanted = expected.get(qid)
            if a is None or b is None or wanted is None or not expected_fits(qtype, wanted):
                continue
            found[qid][state] = (
                passes(qtype, {qtype: b}, wanted, t_before),
                passes(qtype, {qtype: a}, wanted, threshold),
            )
    return found
