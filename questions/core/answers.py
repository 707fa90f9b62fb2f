"""Answer checking, in pure Python.

This module owns what makes a provider's response acceptable: every asked question answered with
its own type and required fields, every number where it must lie, the advisory `nearUniform`, and
the cost of a call. An answer is checked, never repaired: a response that breaks a rule raises
`AnswerError` (a 502: the provider answered in an unexpected shape), whose detail names the
question and the rule. Answers for ids that were not asked are dropped; fields the provider adds,
to an answer or to the response, are kept.

The rounding tolerance
----------------------
Jev reports every probability, confidence and score rounded to two decimals. Write a reported
value as r and the value the model computed as p. Rounding to two decimals moves a number by at
most half a hundredth, so

    p_i ∈ [r_i − h, r_i + h] ∩ [0, 1],    h = 0.005.                                    (1)

The model's distribution sums to one, Σ p_i = 1. A reported distribution r is therefore
*explainable by rounding* exactly when some p inside the boxes (1) sums to one:

    Σ max(0, r_i − h)  ≤  1  ≤  Σ min(1, r_i + h).                                      (2)

For n values this lets the reported sum drift from 1 by at most n·h (0.015 for three options),
less where a value is 0 and cannot have been rounded up from below zero. A sum outside (2) is no
rounding artefact and the response is rejected.

A score is the weighted sum S = Σ i·p_i over the levels i = 0…n−1, itself reported rounded
(|s − S| ≤ h). Over all p allowed by (1) and Σ p_i = 1, S ranges over an interval [S_lo, S_hi]:
start every p_i at its lower bound and hand the remaining mass 1 − Σ lower to the highest
levels first (for S_hi) or the lowest first (for S_lo), each up to its upper bound. This greedy
fill is optimal because S is linear in p and the constraints are a box cut by one hyperplane. A
reported score is accepted exactly when

    S_lo − h  ≤  s  ≤  S_hi + h.                                                        (3)

For the documented answer {"0": 0.0, "1": 0.95, "2": 0.05} with s = 1.05 the boxes are
[0, 0.005], [0.945, 0.955], [0.045, 0.055]; the lower bounds leave 0.01 to place, which gives
[S_lo, S_hi] = [1.04, 1.055], widened by h to [1.035, 1.06]: accepted. A score of 2 over
{0.05, 0.2, 0.6, 0.15} (Σ i·r_i = 1.85, accepted range [1.825, 1.875]) is not. A further 1e-9
absorbs binary floating point.
A probability may arrive as the integer 0 or 1; booleans are not numbers here.

`score` must also lie in 0…n−1 and probabilities and confidence in 0…1: rounding never moves a
value across those bounds, so they get no tolerance.

Which rules refuse depends on the wire
--------------------------------------
`check_response(..., rules=...)` takes the rules that make a 502 on the wire that answered:

- `RUNTIME` (the runtime's `POST /api/decisions`, seed 000): every asked question answered with
  its own type and required fields, probabilities and confidence in 0..1, a finite score in
  0..n−1. The runtime checks no more, so the console refuses no more.
- `GATEWAY` (the provider wires, seed 002): also the option keys (a declared choice, exactly the
  declared options or levels in `probabilities`, legend keys 0…n−1), sums (2) and the weighted
  score (3).

What a wire's rules let through is never refused and never fixed: it is listed in the checked
answer's `flags` (a list of `{"code", "detail"}`), advisory like `nearUniform`. On every wire a
choice that is not its most probable option is such a flag (`not_most_probable`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from questions.core import spec

HALF_HUNDREDTH: Final = 0.005
FLOAT_SLACK: Final = 1e-9
NEAR_UNIFORM_WITHIN: Final = 0.05
#: a noul's P(true) at or above this reads as true, unless a run or a comparison sets its own
#: threshold: the one definition the runs, reports, charts, controls and pages use
NOUL_THRESHOLD: Final = 0.5
DEFAULT_PRICE_PER_MILLION_INPUT_TOKENS: Final = 0.042

REQUIRED_FIELDS: Final = {
    "choice": ("choice", "probabilities", "confidence"),
    "score": ("score", "probabilities", "legend", "confidence"),
    "noul": ("noul",),
}


class Rule(enum.Flag):
    """The answer rules a wire enforces (see the module docstring)."""

    SHAPE = enum.auto()  # types, required fields, ranges 0..1, a finite score in 0..n-1, no gap
    OPTIONS = enum.auto()  # declared choice; probabilities and legend keyed as declared
    SUMS = enum.auto()  # probabilities sum to one within two-decimal rounding
    WEIGHTED = enum.auto()  # the score agrees with its probabilities within rounding


RUNTIME: Final = Rule.SHAPE
GATEWAY: Final = Rule.SHAPE | Rule.OPTIONS | Rule.SUMS | Rule.WEIGHTED


class AnswerError(Exception):
    """The provider answered in an unexpected shape: a 502. `detail` names the question and the
    broken rule; `problems` lists every rule broken, as (question id or None, message)."""

    status = 502

    def __init__(self, problems: list[tuple[str | None, str]]):
        self.problems = problems
        shown = "; ".join(message for _, message in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        self.detail = f"The provider's answer was rejected: {shown}{more}"
        super().__init__(self.detail)

    @property
    def question(self) -> str | None:
        return self.problems[0][0] if self.problems else None


@dataclass(frozen=True)
class CheckedDecision:
    """A response that passed every check: answers keyed by the asked ids, in asked order."""

    model: str | None
    answers: dict[str, dict[str, Any]]
    usage: dict[str, Any] | None
    cost: float | None
    extra: dict[str, Any] = field(default_factory=dict)  # top-level fields the provider added
    dropped: tuple[str, ...] = ()  # ids answered but never asked

    def to_json(self) -> dict[str, Any]:
        return {
            **self.extra,
            "model": self.model,
            "answers": self.answers,
            "usage": self.usage,
            "cost": self.cost,
        }


def is_number(value: Any) -> bool:
    """A finite JSON number a double can hold; `true`/`false` are not numbers, and neither is an
    integer too large for a double (JSON allows 400 digits; `math.isfinite` would overflow)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _kind(value: Any) -> str:
    """`spec.describe`, telling an integer too large for a double apart from a number."""
    if isinstance(value, int) and not isinstance(value, bool) and not is_number(value):
        return "an integer too large for a double"
    return spec.describe(value)


def near_uniform(probabilities: Mapping[str, float]) -> bool:
    """Advisory: every option within 0.05 of 1/n, so the model did not really choose."""
    if not probabilities:
        return False
    even = 1 / len(probabilities)
    return all(abs(p - even) <= NEAR_UNIFORM_WITHIN + FLOAT_SLACK for p in probabilities.values())


def rounding_bounds(reported: list[float]) -> tuple[list[float], list[float]]:
    """The box (1) of the module docstring: where each unrounded value can lie."""
    lower = [max(0.0, r - HALF_HUNDREDTH) for r in reported]
    upper = [min(1.0, r + HALF_HUNDREDTH) for r in reported]
    return lower, upper


def sum_explained_by_rounding(reported: list[float]) -> bool:
    """Condition (2): some distribution that rounds to `reported` sums to one."""
    lower, upper = rounding_bounds(reported)
    return sum(lower) <= 1 + FLOAT_SLACK and sum(upper) >= 1 - FLOAT_SLACK


def weighted_score_range(reported: list[float]) -> tuple[float, float]:
    """[S_lo, S_hi] of the module docstring, for a distribution that passes (2)."""
    lower, upper = rounding_bounds(reported)

    def fill(order: range) -> float:
        p = list(lower)
        remaining = 1 - sum(lower)
        for i in order:
            add = max(0.0, min(remaining, upper[i] - lower[i]))
            p[i] += add
            remaining -= add
        return sum(i * pi for i, pi in enumerate(p))

    n = len(reported)
    return fill(range(n)), fill(range(n - 1, -1, -1))


def cost_of(usage: Any, price_per_million: float | None) -> float | None:
    """Cost of a call: a cost the provider reports wins; else input tokens × price. Unknown
    token counts, or an unknown price (None), stay unknown (None), never zero."""
    if not isinstance(usage, Mapping):
        return None
    reported = usage.get("cost")
    if is_number(reported) and reported >= 0:
        return float(reported)
    tokens = usage.get("input_tokens")
    if price_per_million is not None and is_number(tokens) and tokens >= 0:
        return tokens * price_per_million / 1_000_000
    return None


def _fmt(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


class _AnswerChecker:
    def __init__(self, rules: Rule) -> None:
        self.rules = rules
        self.problems: list[tuple[str | None, str]] = []
        self.flags: list[dict[str, str]] = []  # the answer being checked

    def fail(self, qid: str | None, message: str) -> None:
        self.problems.append((qid, message))

    def beyond(self, rule: Rule, qid: str, code: str, message: str) -> None:
        """A broken rule: a problem on a wire that enforces it, a flag on one that does not."""
        if rule in self.rules:
            self.fail(qid, message)
        else:
            self.flags.append({"code": code, "detail": message})

    def unit(self, qid: str, name: str, value: Any) -> bool:
        """A number in 0..1."""
        if not is_number(value):
            self.fail(qid, f"`{qid}`: {name} must be a number; got {_kind(value)}")
            return False
        if not 0 <= value <= 1:
            self.fail(qid, f"`{qid}`: {name} is {_fmt(value)}; it must lie in 0..1")
            return False
        return True

    def distribution(
        self, qid: str, probabilities: Any, keys: list[str], what: str
    ) -> tuple[dict[str, float] | None, bool]:
        """A map of probabilities in 0..1 naming exactly `keys`, whose sum rounding explains.
        Returns the map when every value is a probability (else None), and whether it names
        exactly `keys` with a sum rounding explains."""
        if not isinstance(probabilities, Mapping):
            self.fail(
                qid, f"`{qid}`: probabilities must be an object; got {spec.describe(probabilities)}"
            )
            return None, False
        known = set(keys)
        missing = [k for k in keys if k not in probabilities]
        extra = [k for k in probabilities if k not in known]
        if missing:
            self.beyond(
                Rule.OPTIONS,
                qid,
                "missing_keys",
                f"`{qid}`: probabilities lack {what} {_names(missing)}",
            )
        if extra:
            self.beyond(
                Rule.OPTIONS,
                qid,
                "undeclared_keys",
                f"`{qid}`: probabilities name undeclared {what} {_names(extra)}",
            )
        enforced = Rule.OPTIONS in self.rules
        shown = keys if enforced else list(probabilities)
        ok = True
        for key in shown:
            value = probabilities.get(key)
            if key in probabilities and not (is_number(value) and 0 <= value <= 1):
                ok = self.unit(qid, f"the probability of {what} `{key}`", value) and ok
        if not ok or (enforced and (missing or extra)):
            return None, False
        values = [probabilities[k] for k in shown]
        if not sum_explained_by_rounding(values):
            self.beyond(
                Rule.SUMS,
                qid,
                "sum",
                f"`{qid}`: probabilities sum to {_fmt(sum(values))}, which two-decimal rounding "
                f"of {len(values)} values cannot explain",
            )
            return (None if Rule.SUMS in self.rules else dict(probabilities)), False
        return dict(probabilities), not missing and not extra

    def answer(self, question: spec.Question, answer: Any) -> dict[str, Any] | None:
        qid = question.id
        self.flags = []
        if not isinstance(answer, Mapping):
            self.fail(qid, f"`{qid}`: the answer must be an object; got {spec.describe(answer)}")
            return None
        atype = answer.get("type")
        if atype != question.type:
            got = f"`{atype}`" if isinstance(atype, str) else "no type"
            self.fail(qid, f"`{qid}` was asked as {question.type} and answered with {got}")
            return None
        missing = [f for f in REQUIRED_FIELDS[question.type] if f not in answer]
        if missing:
            self.fail(qid, f"{question.type} `{qid}`: the answer lacks {_names(missing)}")
            return None
        before = len(self.problems)
        checked = dict(answer)
        if question.type == "noul":
            self.unit(qid, "noul", answer["noul"])
        elif question.type == "choice":
            self.choice(question, answer, checked)
        else:
            self.score(question, answer)
        if self.flags:
            checked["flags"] = self.flags
        return checked if len(self.problems) == before else None

    def choice(self, question: spec.Question, answer: Mapping, checked: dict) -> None:
        qid, options = question.id, question.option_names
        chosen = answer["choice"]
        if not isinstance(chosen, str):
            self.fail(qid, f"choice `{qid}`: choice must be a string; got {spec.describe(chosen)}")
        elif chosen not in options:
            self.beyond(
                Rule.OPTIONS,
                qid,
                "undeclared_choice",
                f"choice `{qid}` chose `{chosen}`, which is not a declared option",
            )
        self.unit(qid, "confidence", answer["confidence"])
        probabilities, exact = self.distribution(qid, answer["probabilities"], options, "option")
        if probabilities is None:
            return
        if exact:
            checked["nearUniform"] = near_uniform(probabilities)
        if isinstance(chosen, str) and chosen in probabilities:
            top = max(probabilities.values())
            if probabilities[chosen] < top:  # a tie at the top is not a disagreement
                best = [k for k, p in probabilities.items() if p == top]
                self.flags.append(
                    {
                        "code": "not_most_probable",
                        "detail": f"choice `{qid}` chose `{chosen}` "
                        f"({_fmt(probabilities[chosen])}) but {_names(best)} is more probable "
                        f"({_fmt(top)})",
                    }
                )

    def score(self, question: spec.Question, answer: Mapping) -> None:
        qid, n = question.id, question.level_count
        keys = [str(i) for i in range(n)]
        self.unit(qid, "confidence", answer["confidence"])
        legend = answer["legend"]
        if not isinstance(legend, Mapping):
            self.fail(qid, f"`{qid}`: legend must be an object; got {spec.describe(legend)}")
        elif sorted(legend) != sorted(keys):
            self.beyond(
                Rule.OPTIONS,
                qid,
                "legend_keys",
                f"score `{qid}`: legend keys are {_names(list(legend))}; expected 0…{n - 1}",
            )
        value = answer["score"]
        if not is_number(value):
            self.fail(qid, f"score `{qid}`: score must be a number; got {_kind(value)}")
            return
        if not 0 <= value <= n - 1:
            self.fail(qid, f"score `{qid}`: score is {_fmt(value)}; it must lie in 0..{n - 1}")
            return
        probabilities, exact = self.distribution(qid, answer["probabilities"], keys, "level")
        if probabilities is None or not exact:
            return
        values = [probabilities[k] for k in keys]
        lo, hi = weighted_score_range(values)
        if not lo - HALF_HUNDREDTH - FLOAT_SLACK <= value <= hi + HALF_HUNDREDTH + FLOAT_SLACK:
            weighted = sum(i * p for i, p in enumerate(values))
            self.beyond(
                Rule.WEIGHTED,
                qid,
                "weighted_score",
                f"score `{qid}`: score is {_fmt(value)} but its probabilities weigh "
                f"{_fmt(weighted)}; two-decimal rounding allows {lo - HALF_HUNDREDTH:.3f}…"
                f"{hi + HALF_HUNDREDTH:.3f}",
            )


def _names(keys: list[str]) -> str:
    shown = ", ".join(f"`{k}`" for k in keys[:5])
    return shown + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def check_response(
    questions: spec.Document | Mapping[str, spec.Question],
    body: Any,
    *,
    price_per_million: float | None = DEFAULT_PRICE_PER_MILLION_INPUT_TOKENS,
    rules: Rule = GATEWAY,
) -> CheckedDecision:
    """Check a response body against the questions that were asked. `rules` are the ones that
    refuse (a 502) on the wire that answered; what they let through becomes a flag."""
    asked = questions.questions if isinstance(questions, spec.Document) else questions
    checker = _AnswerChecker(rules)
    if not isinstance(body, Mapping):
        raise AnswerError([(None, f"the response is {spec.describe(body)}, not an object")])
    if "error" in body and "answers" not in body:
        raise AnswerError([(None, "the response carries an error instead of answers")])
    raw_answers = body.get("answers")
    if not isinstance(raw_answers, Mapping):
        raise AnswerError([(None, "the response has no answers object")])
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        checker.fail(None, f"model must be a string; got {spec.describe(model)}")
    usage = body.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        checker.fail(None, f"usage must be an object; got {spec.describe(usage)}")
    answers: dict[str, dict[str, Any]] = {}
    for qid, question in asked.items():
        if qid not in raw_answers:
            checker.fail(qid, f"{question.type} `{qid}` has no answer")
            continue
        checked = checker.answer(question, raw_answers[qid])
        if checked is not None:
            answers[qid] = checked
    if checker.problems:
        raise AnswerError(checker.problems)
    return CheckedDecision(
        model=model,
        answers=answers,
        usage=dict(usage) if usage is not None else None,
        cost=cost_of(usage, price_per_million),
        extra={k: v for k, v in body.items() if k not in ("model", "answers", "usage", "cost")},
        dropped=tuple(k for k in raw_answers if k not in asked),
    )
