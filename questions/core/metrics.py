"""What answers mean against each other and against expected answers (pure Python).

Comparison: a choice *flips* when the chosen option differs; a score flips when its nearest
level differs; a noul flips when it crosses the threshold (`answers.NOUL_THRESHOLD` unless
set). A cell's *distance* from the baseline is the total variation distance for a choice or a
score (half the summed absolute differences of the probabilities) and |Δp| for a noul; its
*option deltas* say how each option's (level's, P(true)'s) probability moved (`option_deltas`).

Tests: a choice passes when it equals the expected option; a score when its nearest level
(`nearest_level`, halves going up, as the charts and the confusion read it) is the expected
one; a noul when it is on the expected side of
the threshold (p ≥ t counts as true). Calibration reads the noul's P(true) and the choice's
probability of its chosen option: the Brier score is the mean of (p − outcome)²; the expected
calibration error bins p in ten equal bins and sums, weighted by the bin's share, the gap
between the bin's mean p and how often the outcome was true; the maximum calibration error
(MCE) is the largest of those gaps over the bins that hold an answer; the log loss is the mean
of −log(p) when the outcome was true and −log(1 − p) when not, p held within
[`LOG_LOSS_EPSILON`, 1 − `LOG_LOSS_EPSILON`] so one certain miss costs about 13.8, not infinity.
Bins with fewer than `SPARSE_BIN` answers are marked sparse: their gap says little.

A miss is *confidently wrong* by how sure the answer was of something other than the expected
answer: 1 − P(expected) — the noul's P of the other side, one minus the choice's probability of
the expected option or the score's of the expected level (`wrong_confidence`). A report lists
the `MISSES_LISTED` most confidently wrong first (`Tally.misses_listed`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from questions.core import stats
from questions.core.answers import NOUL_THRESHOLD

SPARSE_BIN = 5
BINS = 10
LOG_LOSS_EPSILON = 1e-6
#: the misses a run's report lists, the most confidently wrong first
MISSES_LISTED = 20


def nearest_level(score: float) -> int:
    """The level a fractional score is nearest to, halves going up (0.5 → 1, 2.5 → 3): the one
    rule for metrics and charts alike (Python's `round` would take halves to even)."""
    return math.floor(score + 0.5)


def flipped(
    qtype: str, base: Mapping[str, Any], other: Mapping[str, Any], threshold: float = NOUL_THRESHOLD
) -> bool:
    if qtype == "choice":
        return base["choice"] != other["choice"]
    if qtype == "score":
        return nearest_level(base["score"]) != nearest_level(other["score"])
    return (base["noul"] >= threshold) != (other["noul"] >= threshold)


def decided(answers: Mapping[str, Any] | None, threshold: float = NOUL_THRESHOLD) -> str | None:
    """What a call's answers decide, as a digest of 32 hex digits: of per question id (sorted)
    its type and the value `flipped` reads (a choice's option, a score's nearest level, a
    noul's side of `threshold`). Two calls with equal digests flip on no question against each
    other at that threshold (but for a 128-bit hash's collision); short, so an index holds it.
    None when an answer lacks its type or that value: unknown, not equal."""
    out: dict[str, list[Any]] = {}
    for qid, answer in (answers or {}).items():
        qtype = answer.get("type") if isinstance(answer, Mapping) else None
        try:
            if qtype == "choice":
                value: Any = answer["choice"]
            elif qtype == "score":
                value = nearest_level(answer["score"])
            elif qtype == "noul":
                value = answer["noul"] >= threshold
            else:
                return None
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        out[qid] = [qtype, value]
    text = json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def distance(qtype: str, base: Mapping[str, Any], other: Mapping[str, Any]) -> float:
    if qtype == "noul":
        return abs(float(base["noul"]) - float(other["noul"]))
    a, b = base["probabilities"], other["probabilities"]
    return 0.5 * sum(abs(float(a.get(k, 0)) - float(b.get(k, 0))) for k in set(a) | set(b))


def option_deltas(
    qtype: str, base: Mapping[str, Any], other: Mapping[str, Any]
) -> dict[str, float]:
    """How each option's probability (a score: each level's; a noul: P(true), keyed `true`)
    moved from `base` to `other`: after − before, rounded to two decimals as the wire's
    probabilities are, the largest move first (equal moves by name). An option only
    one side has counts as 0 on the other."""
    if qtype == "noul":
        moved = {"true": float(other["noul"]) - float(base["noul"])}
    else:
        a, b = base["probabilities"], other["probabilities"]
        keys = [*b, *(k for k in a if k not in b)]
        moved = {k: float(b.get(k, 0)) - float(a.get(k, 0)) for k in keys}
    rounded = {k: round(v, 2) + 0.0 for k, v in moved.items()}  # + 0.0: no -0.0
    # equal moves by name: the stored answers' key order is the provider's on SQLite, jsonb's
    # (by length, then bytes) on PostgreSQL, so it cannot break a tie the same way on both
    return dict(sorted(rounded.items(), key=lambda kv: (-abs(kv[1]), kv[0])))


def passes(
    qtype: str, answer: Mapping[str, Any], expected: Any, threshold: float = NOUL_THRESHOLD
) -> bool:
    if qtype == "choice":
        return answer["choice"] == expected
    if qtype == "score":
        return nearest_level(float(answer["score"])) == int(expected)
    return (float(answer["noul"]) >= threshold) == bool(expected)


def expected_fits(qtype: str, expected: Any) -> bool:
    """Whether an expected answer has the shape its question's type needs."""
    if qtype == "choice":
        return isinstance(expected, str)
    if qtype == "score":
        return isinstance(expected, int) and not isinstance(expected, bool)
    return isinstance(expected, bool)


@dataclass(frozen=True)
class Case:
    """One answered question about one state, with what was expected (if anything)."""

    state: str
    question: str
    qtype: str
    answer: Mapping[str, Any]
    expected: Any = None

    @property
    def checked(self) -> bool:
        return self.expected is not None and expected_fits(self.qtype, self.expected)


def wrong_confidence(qtype: str, answer: Mapping[str, Any], expected: Any) -> float | None:
    """How sure an answer was of something other than `expected`: 1 − the probability it gave
    the expected answer (a noul's side, a choice's option, a score's level); None when the
    answer carries no such probability (a score or choice without `probabilities`)."""
    if qtype == "noul":
        p = float(answer["noul"])
        return 1.0 - (p if expected else 1.0 - p)
    probabilities = answer.get("probabilities")
    if not isinstance(probabilities, Mapping) or not probabilities:
        return None
    key = str(expected)
    try:
        return 1.0 - float(probabilities.get(key, 0.0))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Miss:
    """One answer that missed its expected one: the item (or, once named, the state) it is
    of, the question, what was expected and answered (`shown`), and `wrong_confidence`."""

    item: int | str
    question: str
    qtype: str
    expected: Any
    answered: str
    wrong: float | None

    def order(self) -> tuple[float, int | str, str]:
        """The most confidently wrong first (one with no probability last), then by item (the
        items of one list are all ids or all names) and question."""
        return (-(self.wrong if self.wrong is not None else -1.0), self.item, self.question)

    def as_row(self) -> list[Any]:
        return [self.item, self.question, self.qtype, self.expected, self.answered, self.wrong]


def most_confidently_wrong(misses: Iterable[Miss], n: int = MISSES_LISTED) -> list[Miss]:
    return sorted(misses, key=Miss.order)[:n]


@dataclass
class Bin:
    low: float
    high: float
    count: int = 0
    confidence: float = 0.0  # mean p
    frequency: float = 0.0  # how often the outcome was true

    @property
    def sparse(self) -> bool:
        return self.count < SPARSE_BIN


@dataclass
class Calibration:
    count: int
    brier: float | None
    ece: float | None
    bins: list[Bin]
    mce: float | None = None
    log_loss: float | None = None


def calibration(pairs: Iterable[tuple[float, bool]]) -> Calibration:
    """Brier score, expected and maximum calibration error, log loss and reliability bins of
    (p, outcome) pairs; the sums are exact (`math.fsum`), so the pairs' order changes nothing."""
    pairs = [(min(1.0, max(0.0, float(p))), bool(y)) for p, y in pairs]
    bins = [Bin(i / BINS, (i + 1) / BINS) for i in range(BINS)]
    if not pairs:
        return Calibration(0, None, None, bins)
    members: list[list[tuple[float, bool]]] = [[] for _ in range(BINS)]
    for p, y in pairs:
        members[min(BINS - 1, int(p * BINS))].append((p, y))
    ece = mce = 0.0
    for b, group in zip(bins, members, strict=True):
        if group:
            b.count = len(group)
            b.confidence = math.fsum(p for p, _ in group) / len(group)
            b.frequency = sum(1 for _, y in group if y) / len(group)
            ece += len(group) / len(pairs) * abs(b.confidence - b.frequency)
            mce = max(mce, abs(b.confidence - b.frequency))
    brier = math.fsum((p - (1.0 if y else 0.0)) ** 2 for p, y in pairs) / len(pairs)
    return Calibration(len(pairs), brier, ece, bins, mce, log_loss(pairs))


def log_loss(pairs: Iterable[tuple[float, bool]]) -> float | None:
    """The mean negative log-likelihood of the outcomes under p (None with no pair)."""
    pairs = list(pairs)
    if not pairs:
        return None
    low, high = LOG_LOSS_EPSILON, 1 - LOG_LOSS_EPSILON
    return -math.fsum(
        math.log(min(high, max(low, p)) if y else 1 - min(high, max(low, p))) for p, y in pairs
    ) / len(pairs)


@dataclass
class QuestionReport(stats.Rated):
    question: str
    qtype: str
    checked: int = 0
    passed: int = 0
    error_total: float = 0.0  # score: the summed absolute errors ...
    errors: int = 0  # ... of this many answers
    # expected → chosen (a score's levels as strings: expected level → nearest level)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def mae(self) -> float | None:
        return self.error_total / self.errors if self.errors else None


@dataclass
class Report(stats.Rated):
    checked: int
    passed: int
    questions: dict[str, QuestionReport]
    noul_calibration: Calibration
    choice_calibration: Calibration


def report(cases: Iterable[Case], threshold: float = NOUL_THRESHOLD) -> Report:
    """Pass rates overall and per question (by question id), confusion matrices, MAE and
    calibration."""
    tally = Tally(threshold)
    for case in cases:
        tally.case(case)
    return tally.report()


@dataclass(frozen=True)
class Slice(stats.Rated):
    """A run's pass rate over the states that carry one tag."""

    tag: str
    states: int
    checked: int
    passed: int


def tag_slices(
    tagged: Iterable[tuple[Iterable[str], Iterable[Case]]], threshold: float = NOUL_THRESHOLD
) -> list[Slice]:
    """Per tag of the states (each state's tags and its cases), the pass rate of its checked
    cases, by tag name."""
    tally = Tally(threshold)
    for tags, cases in tagged:
        checks = [tally.passes(c) for c in cases if c.checked]
        tally.tag(tags, len(checks), sum(checks))
    return tally.slices()


def report_as_json(report: Report) -> dict[str, Any]:
    """A report as a finished run stores it: its size depends on the questions and their
    options, never on the number of answers."""

    def calibration_json(c: Calibration) -> dict[str, Any]:
        return {
            "count": c.count,
            "brier": c.brier,
            "ece": c.ece,
            "mce": c.mce,
            "log_loss": c.log_loss,
            "bins": [[b.low, b.high, b.count, b.confidence, b.frequency] for b in c.bins],
        }

    return {
        "checked": report.checked,
        "passed": report.passed,
        "questions": [
            [q.question, q.qtype, q.checked, q.passed, q.error_total, q.errors, q.confusion]
            for q in report.questions.values()
        ],
        "noul_calibration": calibration_json(report.noul_calibration),
        "choice_calibration": calibration_json(report.choice_calibration),
    }


def report_from_json(data: Mapping[str, Any]) -> Report:
    """The report `report_as_json` stored."""

    def calibration_of(c: Mapping[str, Any]) -> Calibration:
        return Calibration(
            c["count"],
            c["brier"],
            c["ece"],
            [Bin(*b) for b in c["bins"]],
            mce=c.get("mce"),  # a report stored before the console measured them has none
            log_loss=c.get("log_loss"),
        )

    return Report(
        data["checked"],
        data["passed"],
        {q[0]: QuestionReport(*q) for q in data["questions"]},
        calibration_of(data["noul_calibration"]),
        calibration_of(data["choice_calibration"]),
    )


@dataclass
class Summary:
    """What a finished run stores about itself: its checked and passed pairs, its failed
    states, and per answered item how many of its answers missed the expected one."""

    checked: int = 0
    passed: int = 0
    failed_states: int = 0
    misses: dict[int, int] = field(default_factory=dict)


def summarize(
    items: Iterable[tuple[int, str, Mapping[str, Any] | None, Mapping[str, Any] | None]],
    threshold: float = NOUL_THRESHOLD,
) -> Summary:
    """A run's summary from its items as (id, status, expected, answers) rows."""
    tally, failed = Tally(threshold), 0
    for pk, status, expected, answers in items:
        failed += status == "failed"
        if status == "answered":
            tally.add(pk, (), expected, answers)
    return tally.summary(failed)


class Tally:
    """A run's summary, test report and tag slices, added up one answered item at a time
    (`add`): as a run writes its answers (`services.batches`, each batch's tally `merge`d into
    the run's once the batch is written), or from every answered item when the run finishes
    without one. Each check is worked out once for all three. The sums are exact (`math.fsum`
    when read), so the order in which the items come changes nothing: the report of a tally
    added up while writing equals the one worked out afterwards from the database."""

    def __init__(self, threshold: float = NOUL_THRESHOLD) -> None:
        self.threshold = threshold
        self.misses: dict[int, int] = {}  # answered item → how many of its answers missed
        self.questions: dict[str, QuestionReport] = {}
        self.errors: dict[str, list[float]] = {}  # a score question's absolute errors
        self.noul_pairs: list[tuple[float, bool]] = []
        self.choice_pairs: list[tuple[float, bool]] = []
        self.tags: dict[str, list[int]] = {}  # tag → [states, checked, passed]
        self.worst: list[Miss] = []  # the most confidently wrong misses (a bounded list)

    def passes(self, case: Case) -> bool:
        return passes(case.qtype, case.answer, case.expected, self.threshold)

    def add(
        self,
        pk: int,
        tags: Iterable[str] | None,
        expected: Mapping[str, Any] | None,
        answers: Mapping[str, Any] | None,
    ) -> int:
        """An answered item: its answers checked against what its state expected, counted in
        the report, its state's tags and its misses; returns its misses."""
        expected = expected or {}
        checked = passed = 0
        for qid, answer in (answers or {}).items():
            case = Case("", qid, answer.get("type", ""), answer, expected.get(qid))
            ok = self.case(case)
            if ok is not None:
                checked += 1
                passed += ok
            if ok is False:
                self.missed(pk, case)
        if tags:
            self.tag(tags, checked, passed)
        self.misses[pk] = checked - passed
        return checked - passed

    def case(self, case: Case) -> bool | None:
        """One answered question counted in the report: whether it passed, None when nothing
        was expected of it."""
        q = self.questions.get(case.question)
        if q is None:
            q = self.questions[case.question] = QuestionReport(case.question, case.qtype)
        if not case.checked:
            return None
        ok = self.passes(case)
        q.checked += 1
        q.passed += ok
        if case.qtype == "choice":
            row = q.confusion.setdefault(case.expected, {})
            row[case.answer["choice"]] = row.get(case.answer["choice"], 0) + 1
            self.choice_pairs.append(
                (float(case.answer["probabilities"][case.answer["choice"]]), ok)
            )
        elif case.qtype == "score":
            self.errors.setdefault(case.question, []).append(
                abs(float(case.answer["score"]) - int(case.expected))
            )
            row = q.confusion.setdefault(str(case.expected), {})
            level = str(nearest_level(float(case.answer["score"])))
            row[level] = row.get(level, 0) + 1
        else:
            self.noul_pairs.append((float(case.answer["noul"]), bool(case.expected)))
        return ok

    def missed(self, item: int, case: Case) -> None:
        """A miss of item `item`, kept while it is among the most confidently wrong."""
        self.worst.append(
            Miss(
                item,
                case.question,
                case.qtype,
                case.expected,
                shown(case.qtype, case.answer, self.threshold),
                wrong_confidence(case.qtype, case.answer, case.expected),
            )
        )
        if len(self.worst) > 2 * MISSES_LISTED:
            self.worst = most_confidently_wrong(self.worst)

    def misses_listed(self) -> list[Miss]:
        """The `MISSES_LISTED` most confidently wrong misses, the most first."""
        return most_confidently_wrong(self.worst)

    def tag(self, tags: Iterable[str], checked: int, passed: int) -> None:
        """A state's tags (each once), with its checked and passed cases."""
        for tag in dict.fromkeys(tags):
            row = self.tags.setdefault(str(tag), [0, 0, 0])
            row[0] += 1
            row[1] += checked
            row[2] += passed

    def merge(self, other: Tally) -> None:
        """Add up what `other` counted (another batch of the same run's items)."""
        self.misses.update(other.misses)
        self.worst = most_confidently_wrong([*self.worst, *other.worst])
        for qid, theirs in other.questions.items():
            q = self.questions.get(qid)
            if q is None:
                q = self.questions[qid] = QuestionReport(qid, theirs.qtype)
            q.checked += theirs.checked
            q.passed += theirs.passed
            for expected, row in theirs.confusion.items():
                mine = q.confusion.setdefault(expected, {})
                for level, n in row.items():
                    mine[level] = mine.get(level, 0) + n
        for qid, errors in other.errors.items():
            self.errors.setdefault(qid, []).extend(errors)
        self.noul_pairs += other.noul_pairs
        self.choice_pairs += other.choice_pairs
        for tag, (states, checked, passed) in other.tags.items():
            row = self.tags.setdefault(tag, [0, 0, 0])
            row[0] += states
            row[1] += checked
            row[2] += passed

    def report(self) -> Report:
        for qid, q in self.questions.items():
            errors = self.errors.get(qid, ())
            q.error_total, q.errors = math.fsum(errors), len(errors)
        checked = sum(q.checked for q in self.questions.values())
        passed = sum(q.passed for q in self.questions.values())
        return Report(
            checked,
            passed,
            {qid: self.questions[qid] for qid in sorted(self.questions)},  # whatever came first
            calibration(self.noul_pairs),
            calibration(self.choice_pairs),
        )

    def slices(self) -> list[Slice]:
        return [Slice(tag, *self.tags[tag]) for tag in sorted(self.tags)]

    def summary(self, failed_states: int) -> Summary:
        report = self.report()
        return Summary(report.checked, report.passed, failed_states, dict(self.misses))


def expected_text(value: Any) -> str:
    """An answer or expected value as the contract writes it: `true`, `false`, `3`, `billing`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def shown(qtype: str, answer: Mapping[str, Any] | None, threshold: float = NOUL_THRESHOLD) -> str:
    """An answer as a report shows it: the value it reads as, then the number behind it —
    `billing 0.71`, `2 (2.05)`, `true 0.66`; `—` for no answer."""
    if not answer:
        return "—"
    if qtype == "choice":
        p = (answer.get("probabilities") or {}).get(answer["choice"])
        return f"{answer['choice']} {float(p):.2f}" if p is not None else str(answer["choice"])
    if qtype == "score":
        return f"{nearest_level(float(answer['score']))} ({float(answer['score']):.2f})"
    p = float(answer["noul"])
    return f"{'true' if p >= threshold else 'false'} {p:.2f}"
