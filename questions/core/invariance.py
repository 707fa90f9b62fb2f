"""Invariance and coherence controls: what seed 001 promises of a backend — keys are addressing,
never content; questions are independent — asked as a control run's variants, with a verdict
per question and check (pure Python; no Django).

Variant 0 is the questions as written; then, in this order:

- **renamed** — every question id replaced by an opaque one: the answers must not change;
- **reordered** — the questions in reverse order: the answers must not change;
- **negated** — each noul's statement negated (its string instructions prefixed with
  `NEGATION`, its true and false cases swapped): P(true) + P(negated true) ≈ 1;
- **cloned** — each choice's first option cloned (the same description under a new name): its
  mass should split between the two, not grow;
- **alone** — each question asked alone, one call per question: its answer must not change from
  the one it got in its batch.

A check holds for a question when no compared state breaks it by more than `TOLERANCE` (and,
for the invariant checks, no answer flips). Variants a set has no use for (no noul, no choice,
one question) are not asked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from questions.core import metrics, spec
from questions.core.answers import NOUL_THRESHOLD

KIND = "invariance"
TITLE = "invariance and coherence"
RENAMED, REORDERED, NEGATED, CLONED, ALONE = "renamed", "reordered", "negated", "cloned", "alone"
CHECKS = (RENAMED, REORDERED, NEGATED, CLONED, ALONE)
#: what each check promises, as the page and the CLI say it
PROMISES = {
    RENAMED: "ids renamed: the answers must not change",
    REORDERED: "questions reordered: the answers must not change",
    NEGATED: "statement negated: P(true) + P(negated true) ≈ 1",
    CLONED: "first option cloned: its mass splits, it does not grow",
    ALONE: "asked alone: the answer is the one it got in its batch",
}
#: a distance, a sum's distance from 1 or a mass's growth above this breaks a check
TOLERANCE = 0.05
NEGATION = "It is not the case that: "
CLONE_SUFFIX = " (clone)"


@dataclass(frozen=True)
class Variant:
    check: str | None  # None: as written
    question: str | None = None  # the question asked alone


def variants(questions: Mapping[str, spec.Question]) -> list[Variant]:
    """The calls an invariance control asks about each state, variant 0 first."""
    out = [Variant(None), Variant(RENAMED)]
    if len(questions) > 1:
        out.append(Variant(REORDERED))
    if any(_negatable(q) for q in questions.values()):
        out.append(Variant(NEGATED))
    if any(q.type == "choice" for q in questions.values()):
        out.append(Variant(CLONED))
    if len(questions) > 1:
        out += [Variant(ALONE, qid) for qid in questions]
    return out


def _negatable(q: spec.Question) -> bool:
    return q.type == "noul" and isinstance(q.instructions, str) and bool(q.instructions.strip())


def _renamed(questions: Mapping[str, spec.Question]) -> dict[str, str]:
    """Original id → an opaque id no question of the set has."""
    taken = set(questions)
    out = {}
    for i, qid in enumerate(questions, 1):
        name = f"q{i}"
        while name in taken:
            name += "_"
        taken.add(name)
        out[qid] = name
    return out


def _clone_name(q: spec.Question) -> str:
    name = f"{q.option_names[0]}{CLONE_SUFFIX}"
    while name in q.criteria:
        name += "'"
    return name


def negated(q: spec.Question) -> spec.Question:
    criteria = q.criteria
    if isinstance(criteria, dict) and criteria:
        swap = {"true": "false", "false": "true"}
        criteria = {swap.get(k, k): v for k, v in criteria.items()}
    return dataclasses.replace(q, instructions=NEGATION + q.instructions, criteria=criteria)


def cloned(q: spec.Question) -> spec.Question:
    first = q.option_names[0]
    return dataclasses.replace(q, criteria={**q.criteria, _clone_name(q): q.criteria[first]})


def asked(questions: Mapping[str, spec.Question], variant: Variant) -> dict[str, spec.Question]:
    """The questions map a variant sends."""
    if variant.check == RENAMED:
        names = _renamed(questions)
        return {names[qid]: dataclasses.replace(q, id=names[qid]) for qid, q in questions.items()}
    if variant.check == REORDERED:
        return dict(reversed(list(questions.items())))
    if variant.check == NEGATED:
        return {k: negated(q) if _negatable(q) else q for k, q in questions.items()}
    if variant.check == CLONED:
        return {k: cloned(q) if q.type == "choice" else q for k, q in questions.items()}
    if variant.check == ALONE:
        return {variant.question: questions[variant.question]}
    return dict(questions)


def back(
    questions: Mapping[str, spec.Question], variant: Variant, answers: Mapping[str, Any]
) -> dict[str, Any]:
    """A variant's answers by the set's own question ids."""
    if variant.check == RENAMED:
        names = _renamed(questions)
        return {qid: answers[names[qid]] for qid in questions if names[qid] in answers}
    return {qid: answers[qid] for qid in questions if qid in answers}


# --- verdicts ----------------------------------------------------------------------------------


@dataclass
class Check:
    """One check of one question over the states: how many were compared, how many broke it,
    and the largest break."""

    compared: int = 0
    broken: list[str] = field(default_factory=list)
    largest: float | None = None

    @property
    def holds(self) -> bool | None:
        return None if not self.compared else not self.broken

    def as_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "broken": len(self.broken),
            "broken_states": self.broken,
            "largest": None if self.largest is None else round(self.largest, 4),
            "holds": self.holds,
        }


def _break(
    check: str, q: spec.Question, first: Mapping[str, Any], other: Mapping[str, Any]
) -> tuple[float, bool]:
    """How far `other` is from what the check promises given `first` (the answer as written),
    and whether that breaks it."""
    if check == NEGATED:
        gap = abs(float(first["noul"]) + float(other["noul"]) - 1)
        return gap, gap > TOLERANCE
    if check == CLONED:
        option = q.option_names[0]
        split = other["probabilities"].get(option, 0) + other["probabilities"].get(
            _clone_name(q), 0
        )
        growth = split - first["probabilities"].get(option, 0)
        return growth, growth > TOLERANCE
    d = metrics.distance(q.type, first, other)
    flip = metrics.flipped(q.type, first, other, NOUL_THRESHOLD)
    return d, flip or d > TOLERANCE


def report(
    questions: Mapping[str, spec.Question],
    calls: Iterable[tuple[str, int, Mapping[str, Any]]],
) -> dict[str, dict[str, Check]]:
    """Per question, per check it was asked in: the verdict over the states. `calls` are
    (state, variant, answers as the variant was asked)."""
    plan = variants(questions)
    by_state: dict[str, dict[int, Mapping[str, Any]]] = {}
    for state, variant, answers in calls:
        by_state.setdefault(state, {})[variant] = answers
    out: dict[str, dict[str, Check]] = {qid: {} for qid in questions}
    for index, variant in enumerate(plan):
        if variant.check is None:
            continue
        for qid, q in questions.items():
            if not _varied(variant, q, qid):
                continue
            check = out[qid].setdefault(variant.check, Check())
            for state in sorted(by_state):
                first = by_state[state].get(0, {}).get(qid)
                other = back(questions, variant, by_state[state].get(index) or {}).get(qid)
                if first is None or other is None:
                    continue
                check.compared += 1
                gap, broken = _break(variant.check, q, first, other)
                check.largest = gap if check.largest is None else max(check.largest, gap)
                if broken:
                    check.broken.append(state)
    return out


def _varied(variant: Variant, q: spec.Question, qid: str) -> bool:
    if variant.check == NEGATED:
        return _negatable(q)
    if variant.check == CLONED:
        return q.type == "choice"
    if variant.check == ALONE:
        return variant.question == qid
    return True
