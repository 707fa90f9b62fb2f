"""How the approved set does on live traffic (pure Python, no Django): production's answers
read per question — what each decides, whether it was near uniform or unsure — their
distribution by day against the labelled states' expected answers, the answers production
gives that no labelled state expects (a gap to label), and the live pass rate of the version
that answered, where the states production sent have been labelled.

Production's answers come from the application, in the runtime's answer shape, and are read
as they came: an answer of another shape is counted as unreadable, never guessed at. A
question's type is the version's, not what the answer says of itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from questions.core import labelling, metrics, stats
from questions.core.answers import NOUL_THRESHOLD

#: how many days of production's answers the distribution shows, the newest last
DAYS_SHOWN = 14


@dataclass(frozen=True)
class Sent:
    """One production state as the page reads it: the day production answered it (UTC), the
    version that answered (None when the application did not say), production's answers and
    the state's expected answers (its settled labels)."""

    day: date
    version: int | None
    answers: Mapping[str, Any]
    expected: Mapping[str, Any]


@dataclass(frozen=True)
class Reading:
    """Production's answer to one question, read: the answer as a label says it (an option, a
    level's number, true or false), and whether it was near uniform or unsure."""

    value: str
    near_uniform: bool
    unsure: bool


def read(
    question: labelling.Question, answer: Any, threshold: float = NOUL_THRESHOLD
) -> Reading | None:
    """`answer` read as an answer to `question`, or None when it is not one (another shape, a
    value out of range, an option the question does not declare)."""
    if not isinstance(answer, Mapping):
        return None
    try:
        value = labelling.reading(question.type, answer, threshold)
        uniform = labelling.near_uniform(question.type, answer)
        unsure = bool(labelling.unsure(question.type, answer, threshold))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if value not in {choice for choice, _ in question.choices}:
        return None
    return Reading(value, uniform, unsure)


@dataclass
class QuestionTraffic:
    """One question on live traffic: production's answers by day (value → count), how many
    it answered and how many of those were unreadable, near uniform or unsure; the answers
    the labelled states expect (value → count) and those production gives that none expects;
    the live pass rate of the version, and its rate on the hand-made states when known."""

    question: labelling.Question
    by_day: dict[date, Counter] = field(default_factory=dict)
    answered: int = 0
    unreadable: int = 0
    near_uniform: int = 0
    unsure: int = 0
    expected: Counter = field(default_factory=Counter)
    live: stats.Rate = field(default_factory=lambda: stats.Rate(0, 0))
    hand_made: stats.Rate | None = None

    @property
    def values(self) -> list[str]:
        """The question's answers in declared order (what a chart's segments follow)."""
        return [value for value, _ in self.question.choices]

    @property
    def given(self) -> Counter:
        """Production's answers over every day read."""
        total: Counter = Counter()
        for counts in self.by_day.values():
            total.update(counts)
        return total

    @property
    def gaps(self) -> list[str]:
        """The answers production gives that no labelled state expects, in declared order."""
        given = self.given
        return [v for v in self.values if given[v] and not self.expected[v]]

    @property
    def read(self) -> int:
        return self.answered - self.unreadable

    def share(self, count: int) -> float | None:
        return count / self.read if self.read else None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.question.id,
            "type": self.question.type,
            "answered": self.answered,
            "unreadable": self.unreadable,
            "near_uniform": {"count": self.near_uniform, "share": self.share(self.near_uniform)},
            "unsure": {"count": self.unsure, "share": self.share(self.unsure)},
            "by_day": [
                {"day": day.isoformat(), "counts": {v: counts[v] for v in self.values if counts[v]}}
                for day, counts in sorted(self.by_day.items())
            ],
            "expected": {v: self.expected[v] for v in self.values if self.expected[v]},
            "gaps": self.gaps,
            "live": rate_json(self.live),
            "hand_made": None if self.hand_made is None else rate_json(self.hand_made),
        }


def rate_json(rate: stats.Rated) -> dict[str, Any]:
    """A pass rate as JSON carries it everywhere: passed, checked, the rate and its interval."""
    return {
        "passed": rate.passed,
        "checked": rate.checked,
        "pass_rate": rate.pass_rate,
        "interval": rate.pass_rate_interval,
    }


def traffic(
    questions: Iterable[labelling.Question],
    sent: Iterable[Sent],
    *,
    version: int | None,
    judged: Iterable[Sent] = (),
    expected: Mapping[str, Iterable[tuple[Any, int]]] | None = None,
    threshold: float = NOUL_THRESHOLD,
) -> list[QuestionTraffic]:
    """Each question of `questions` on live traffic: production's answers to the states
    `sent` (the days shown), by day; the labelled states' expected answers (`expected`: per
    question, each expected answer as stored and how many states expect it); and the live
    pass rate of `version` on the states `judged` — production states that version answered
    and someone labelled: production's answer against the settled label."""
    found = [QuestionTraffic(q) for q in questions]
    judged = list(judged)
    for state in sent:
        for t in found:
            q = t.question
            if q.id not in state.answers:
                continue
            t.answered += 1
            reading = read(q, state.answers[q.id], threshold)
            if reading is None:
                t.unreadable += 1
                continue
            t.near_uniform += reading.near_uniform
            t.unsure += reading.unsure
            t.by_day.setdefault(state.day, Counter())[reading.value] += 1
    for t in found:
        t.live = live_rate(t.question, judged, version=version, threshold=threshold)
        for value, n in (expected or {}).get(t.question.id, ()):
            place = t.question.place_of(value)
            if place is not None:
                t.expected[t.question.choices[place][0]] += n
    return found


def live_rate(
    question: labelling.Question,
    judged: Iterable[Sent],
    *,
    version: int | None,
    threshold: float = NOUL_THRESHOLD,
) -> stats.Rate:
    """How often production's answer to `question` was the settled label, on the states
    `version` answered (an unreadable answer counts as a miss: production got it)."""
    passed = checked = 0
    for state in judged:
        place = question.place_of(state.expected.get(question.id, None))
        if version is None or state.version != version or place is None:
            continue
        if question.id not in state.answers:
            continue
        reading = read(question, state.answers[question.id], threshold)
        checked += 1
        passed += reading is not None and reading.value == question.choices[place][0]
    return stats.Rate(passed, checked)


def overall(found: Iterable[QuestionTraffic], *, hand_made: bool = False) -> stats.Rate | None:
    """Every question's live pass rate (or hand-made one) pooled: passed over checked pairs."""
    rates = [t.hand_made if hand_made else t.live for t in found]
    rates = [r for r in rates if r is not None]
    if not rates:
        return None
    return stats.Rate(sum(r.passed for r in rates), sum(r.checked for r in rates))


def hand_made_rates(
    questions: Iterable[labelling.Question],
    answered: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
    threshold: float = NOUL_THRESHOLD,
) -> dict[str, stats.Rate]:
    """Per question, a run's pass rate over `answered` — (expected answers, per question what
    the run's answer reads: a choice's option, a score or P(true)) of the hand-made states it
    asked — as the run's own report counts it (`metrics.passes`)."""
    questions = list(questions)
    counts = {q.id: [0, 0] for q in questions}
    for expected, readings in answered:
        for q in questions:
            value, raw = (expected or {}).get(q.id, None), (readings or {}).get(q.id)
            if raw is None or not metrics.expected_fits(q.type, value):
                continue
            try:
                passed = metrics.passes(q.type, {q.type: raw}, value, threshold)
            except (KeyError, TypeError, ValueError, OverflowError):
                continue
            counts[q.id][0] += passed
            counts[q.id][1] += 1
    return {qid: stats.Rate(*c) for qid, c in counts.items()}
