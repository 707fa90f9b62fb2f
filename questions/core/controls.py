"""Controls: what a question set is asked in place of itself, and what the answers then say
(pure Python, seeded and deterministic; no Django).

A control run asks every state once per *variant*. Variant 0 is always the questions as written
(the real answers); the others are made by `variant_questions`:

- **shuffle** — each choice's option descriptions shuffled among its options (a derangement
  where one exists, so every description moves); score levels and noul criteria untouched. The
  pass rate of the shuffled variants is the *floor*: what the question scores when its words
  say nothing about its options. A question whose real pass rate is not clearly above its floor
  (`CLEAR_MARGIN`) is flagged: the words carry no signal here.
- **orders** — each choice's options reordered (a permutation other than the written one where
  one exists), every description kept with its option. Score levels are never reordered: their
  order is their meaning. Per question: the flip rate against the written order and the largest
  total-variation distance.
- **repeat** — the same call again: per question the spread of the probabilities and the flip
  rate against the first call (non-determinism).

A *drift* sets one model's answers against another's: the flips (the decision changed) and the
shifts (the decision stayed, its probability moved past a noise floor: the version's own
repeatability spread on the baseline's model where a repeat run gives one, else
`SHIFT_NOISE_FLOOR`).

The rules of a flip and of a distance are `questions.metrics`'s.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from questions.core import metrics, spec, stats
from questions.core.answers import NOUL_THRESHOLD

SHUFFLE = "shuffle"
ORDERS = "orders"
REPEAT = "repeat"
KINDS = (SHUFFLE, ORDERS, REPEAT)
#: what each kind is called on pages and in the CLI
TITLES = {SHUFFLE: "shuffle control", ORDERS: "order sensitivity", REPEAT: "repeatability"}
MAX_VARIANTS = 20  # K shuffles, K orders or R repeats: at most this many
#: a real pass rate this far above the shuffled floor, at least, is "clearly above" it
CLEAR_MARGIN = 0.15
NO_SIGNAL = "the words carry no signal here"
#: below this many labelled real answers a shuffle verdict is said with its sample size
FEW_ANSWERS = 10


def variants(kind: str, count: int) -> int:
    """How many times each state is asked: the real questions and `count` shuffles or orders;
    or `count` calls in all for repeatability."""
    return count if kind == REPEAT else count + 1


def _rng(seed: int, variant: int, qid: str) -> random.Random:
    # a str seed is hashed with SHA-512: the same on every machine and Python run
    return random.Random(f"{seed}:{variant}:{qid}")


def _permutation(n: int, rng: random.Random, *, derangement: bool) -> list[int]:
    """A seeded permutation of range(n) other than the identity (when n > 1); with
    `derangement`, one that moves every index."""
    order = list(range(n))
    if n < 2:
        return order
    while True:
        rng.shuffle(order)
        moved = [i != j for i, j in enumerate(order)]
        if all(moved) if derangement else any(moved):
            return order


def shuffled(question: spec.Question, rng: random.Random) -> spec.Question:
    """A choice with its option descriptions shuffled among its options; any other question
    as it is."""
    if question.type != "choice":
        return question
    names = list(question.criteria)
    texts = list(question.criteria.values())
    order = _permutation(len(names), rng, derangement=True)
    criteria = {name: texts[order[i]] for i, name in enumerate(names)}
    return dataclasses.replace(question, criteria=criteria)


def reordered(question: spec.Question, rng: random.Random) -> spec.Question:
    """A choice with its options in another order, each keeping its description; any other
    question (a score's levels above all) as it is."""
    if question.type != "choice":
        return question
    items = list(question.criteria.items())
    order = _permutation(len(items), rng, derangement=False)
    return dataclasses.replace(question, criteria=dict(items[i] for i in order))


def variant_questions(
    questions: Mapping[str, spec.Question], kind: str, seed: int, variant: int
) -> dict[str, spec.Question]:
    """The questions asked in `variant` of a control of `kind` seeded with `seed`: variant 0
    and every repeat are the questions as written."""
    if kind not in KINDS:
        raise ValueError(f"Unknown control {kind!r}; one of {', '.join(KINDS)}.")
    if variant == 0 or kind == REPEAT:
        return dict(questions)
    change = shuffled if kind == SHUFFLE else reordered
    return {qid: change(q, _rng(seed, variant, qid)) for qid, q in questions.items()}


# --- what the answers say ------------------------------------------------------------------------


@dataclass(frozen=True)
class Answered:
    """One answered call of a control: the state, the variant, its answers by question id and
    the state's expected answers."""

    state: str
    variant: int
    answers: Mapping[str, Any]
    expected: Mapping[str, Any]


@dataclass
class QuestionControl:
    question: str
    qtype: str
    kind: str
    varied: bool  # whether the control changed this question at all
    real_checked: int = 0
    real_passed: int = 0
    floor_checked: int = 0
    floor_passed: int = 0
    compared: int = 0  # (state, variant) pairs set against the state's variant 0
    flips: int = 0
    largest_distance: float | None = None
    spreads: list[float] = dataclasses.field(default_factory=list)  # per state (repeat)

    @property
    def real_pass_rate(self) -> float | None:
        return self.real_passed / self.real_checked if self.real_checked else None

    @property
    def floor(self) -> float | None:
        return self.floor_passed / self.floor_checked if self.floor_checked else None

    @property
    def flip_rate(self) -> float | None:
        return self.flips / self.compared if self.compared else None

    @property
    def largest_spread(self) -> float | None:
        return max(self.spreads) if self.spreads else None

    @property
    def mean_spread(self) -> float | None:
        return sum(self.spreads) / len(self.spreads) if self.spreads else None

    @property
    def no_signal(self) -> bool | None:
        """Shuffle control: whether the real pass rate is not clearly above the floor (None
        when there is nothing to say: not a choice, or no expected answers)."""
        if (
            self.kind != SHUFFLE
            or not self.varied
            or self.real_pass_rate is None
            or self.floor is None
        ):
            return None
        return self.real_pass_rate - self.floor < CLEAR_MARGIN

    @property
    def few_answers(self) -> bool:
        """Shuffle control: whether the verdict rests on fewer than FEW_ANSWERS labelled real
        answers (a difference of a few states moves it)."""
        return self.no_signal is not None and self.real_checked < FEW_ANSWERS

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.qtype,
            "varied": self.varied,
            "real_pass_rate": self.real_pass_rate,
            "real_pass_rate_interval": stats.interval_list(self.real_passed, self.real_checked),
            "real_checked": self.real_checked,
            "real_passed": self.real_passed,
            "floor": self.floor,
            "floor_interval": stats.interval_list(self.floor_passed, self.floor_checked),
            "floor_checked": self.floor_checked,
            "floor_passed": self.floor_passed,
            "no_signal": self.no_signal,
            "few_answers": self.few_answers,
            "flip_rate": self.flip_rate,
            "compared": self.compared,
            "largest_distance": self.largest_distance,
            "largest_spread": self.largest_spread,
            "mean_spread": self.mean_spread,
        }


def _probabilities(answer: Mapping[str, Any]) -> dict[str, float]:
    if answer.get("type") == "noul" or "noul" in answer:
        return {"true": float(answer["noul"])}
    return {str(k): float(v) for k, v in (answer.get("probabilities") or {}).items()}


def spread(answers: list[Mapping[str, Any]]) -> float:
    """The largest range (max − min) of any one probability over repeated answers."""
    table = [_probabilities(a) for a in answers]
    keys = {k for row in table for k in row}
    return max(
        (max(r.get(k, 0.0) for r in table) - min(r.get(k, 0.0) for r in table) for k in keys),
        default=0.0,
    )


def control_report(
    kind: str,
    qtypes: Mapping[str, str],
    answered: Iterable[Answered],
    threshold: float = NOUL_THRESHOLD,
) -> dict[str, QuestionControl]:
    """Per question of a control run: the real pass rate and the shuffled floor (shuffle), the
    flip rate and largest distance against each state's variant 0, and the spread of the
    probabilities over a state's calls (repeat)."""
    out = {
        qid: QuestionControl(qid, qtype, kind, varied=kind == REPEAT or qtype == "choice")
        for qid, qtype in qtypes.items()
    }
    by_state: dict[str, dict[int, Answered]] = {}
    for a in answered:
        by_state.setdefault(a.state, {})[a.variant] = a
    for state in sorted(by_state):
        calls = by_state[state]
        base = calls.get(0)
        for qid, q in out.items():
            for variant, call in sorted(calls.items()):
                answer = call.answers.get(qid)
                if answer is None:
                    continue
                expected = call.expected.get(qid)
                if expected is not None and metrics.expected_fits(q.qtype, expected):
                    ok = metrics.passes(q.qtype, answer, expected, threshold)
                    if variant == 0:
                        q.real_checked += 1
                        q.real_passed += ok
                    else:
                        q.floor_checked += 1
                        q.floor_passed += ok
                first = base.answers.get(qid) if base else None
                if variant == 0 or first is None:
                    continue
                q.compared += 1
                q.flips += metrics.flipped(q.qtype, first, answer, threshold)
                d = metrics.distance(q.qtype, first, answer)
                q.largest_distance = d if q.largest_distance is None else max(d, q.largest_distance)
            if kind == REPEAT:
                repeated = [c.answers[qid] for c in calls.values() if qid in c.answers]
                if len(repeated) > 1:
                    q.spreads.append(spread(repeated))
    return out


@dataclass(frozen=True)
class NoiseFloor:
    """What a repeatability control says of a question's noise: per question, the largest
    spread of a probability over the same call repeated (nothing changed but the call) and
    the rate at which a repeat flipped. A change between two columns no larger than the spread
    is within the noise floor: the same call moves that far on its own."""

    run_id: int
    spreads: Mapping[str, float]
    flip_rates: Mapping[str, float | None]

    def within(self, qid: str, distance: float | None) -> bool:
        spread = self.spreads.get(qid)
        return distance is not None and spread is not None and distance <= spread

    def holds(
        self, qid: str, qtype: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> bool:
        """Whether an answer's move from `before` to `after` is within the floor; False when
        either answer lacks what a distance reads (a reading without its probabilities)."""
        needs = "noul" if qtype == "noul" else "probabilities"
        if needs not in before or needs not in after:
            return False
        return self.within(qid, metrics.distance(qtype, before, after))

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "questions": {
                qid: {"largest_spread": spread, "flip_rate": self.flip_rates.get(qid)}
                for qid, spread in self.spreads.items()
            },
        }


def noise_floor(run_id: int, report: Mapping[str, QuestionControl]) -> NoiseFloor:
    """The noise floor a repeatability control's report gives."""
    return NoiseFloor(
        run_id,
        {qid: q.largest_spread for qid, q in report.items() if q.largest_spread is not None},
        {qid: q.flip_rate for qid, q in report.items() if q.largest_spread is not None},
    )


# --- drift ---------------------------------------------------------------------------------------

#: a decision's probability that moves by more than this from one model to the other is a
#: *shift*, where no repeatability run of the version on the baseline's model says how far that
#: model's own answers wander (then its largest spread per question is the floor)
SHIFT_NOISE_FLOOR = 0.10
DEFAULT_FLOOR = "default"  # the noise floor's source when no repeatability run gives one


def decided_probability(qtype: str, answer: Mapping[str, Any]) -> float:
    """The probability a decision rests on: the chosen option's (choice), the nearest level's
    (score), P(true) (noul)."""
    if qtype == "noul":
        return float(answer["noul"])
    chosen = answer["choice"] if qtype == "choice" else str(metrics.nearest_level(answer["score"]))
    return float((answer.get("probabilities") or {}).get(chosen, 0.0))


@dataclass(frozen=True)
class Shift:
    """A state whose decision stayed while its probability moved past the noise floor."""

    state: str
    before: float
    after: float

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "before": self.before, "after": self.after}


@dataclass
class QuestionDrift:
    question: str
    qtype: str
    compared: int = 0
    flips: list[str] = dataclasses.field(default_factory=list)  # the states that flipped
    shifts: list[Shift] = dataclasses.field(default_factory=list)  # moved, decision kept
    noise_floor: float = SHIFT_NOISE_FLOOR
    floor_source: str = DEFAULT_FLOOR  # DEFAULT_FLOOR, or "repeat run N"
    pass_before: float | None = None
    pass_after: float | None = None
    checked_before: int = 0
    passed_before: int = 0
    checked_after: int = 0
    passed_after: int = 0

    @property
    def flip_rate(self) -> float | None:
        return len(self.flips) / self.compared if self.compared else None

    @property
    def shift_rate(self) -> float | None:
        return len(self.shifts) / self.compared if self.compared else None


@dataclass
class Drift:
    questions: dict[str, QuestionDrift]
    before: metrics.Report
    after: metrics.Report

    @property
    def compared(self) -> int:
        return sum(q.compared for q in self.questions.values())

    @property
    def flips(self) -> int:
        return sum(len(q.flips) for q in self.questions.values())

    @property
    def flip_rate(self) -> float | None:
        return self.flips / self.compared if self.compared else None

    @property
    def shifts(self) -> int:
        return sum(len(q.shifts) for q in self.questions.values())

    @property
    def shift_rate(self) -> float | None:
        """The share of the compared answers that shifted (the bound of `--max-shift`)."""
        return self.shifts / self.compared if self.compared else None

    def calibration(self) -> dict[str, dict[str, float | None]]:
        """Brier, ECE, MCE and log loss of the noul and the choice answers, before, after and
        the change."""
        out = {}
        for name in ("noul", "choice"):
            old = getattr(self.before, f"{name}_calibration")
            new = getattr(self.after, f"{name}_calibration")
            for measure in ("brier", "ece", "mce", "log_loss"):
                a, b = getattr(old, measure), getattr(new, measure)
                out[f"{name}_{measure}"] = {
                    "before": a,
                    "after": b,
                    "delta": None if a is None or b is None else b - a,
                }
        return out


def delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def noise_floors(
    report: Mapping[str, QuestionControl], source: str
) -> dict[str, tuple[float, str]]:
    """Per question of a repeatability run's report: its largest spread as the noise floor of
    a drift, with where it comes from (questions the run has no spread for are left out)."""
    return {
        qid: (q.largest_spread, source)
        for qid, q in report.items()
        if q.kind == REPEAT and q.largest_spread is not None
    }


def drift(
    before: list[metrics.Case],
    after: list[metrics.Case],
    threshold: float = NOUL_THRESHOLD,
    floors: Mapping[str, tuple[float, str]] | None = None,
) -> Drift:
    """What changed from one run's answers (`before`, the approved model's) to another's: per
    question the states whose answer flipped, those whose decision stayed while its probability
    moved by more than the question's noise floor (`floors`: the floor and its source per
    question, else `SHIFT_NOISE_FLOOR`), and both runs' pass rates and calibration."""
    floors = floors or {}
    old = {(c.state, c.question): c for c in before}
    questions: dict[str, QuestionDrift] = {}
    for c in sorted(after, key=lambda c: (c.question, c.state)):
        q = questions.get(c.question)
        if q is None:
            floor, source = floors.get(c.question, (SHIFT_NOISE_FLOOR, DEFAULT_FLOOR))
            q = questions[c.question] = QuestionDrift(
                c.question, c.qtype, noise_floor=floor, floor_source=source
            )
        base = old.get((c.state, c.question))
        if base is None or base.qtype != c.qtype:
            continue
        q.compared += 1
        if metrics.flipped(c.qtype, base.answer, c.answer, threshold):
            q.flips.append(c.state)
            continue
        was, now = (decided_probability(c.qtype, a) for a in (base.answer, c.answer))
        if round(abs(now - was), 9) > q.noise_floor:  # 0.8 − 0.7 is 0.1, not 0.10000000000000009
            q.shifts.append(Shift(c.state, was, now))
    reports = metrics.report(before, threshold), metrics.report(after, threshold)
    for qid, q in questions.items():
        was, now = (r.questions.get(qid) for r in reports)
        q.pass_before = was.pass_rate if was else None
        q.pass_after = now.pass_rate if now else None
        q.checked_before, q.passed_before = (was.checked, was.passed) if was else (0, 0)
        q.checked_after, q.passed_after = (now.checked, now.passed) if now else (0, 0)
    return Drift(questions, *reports)
