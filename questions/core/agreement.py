"""How far labellers agree, with its noise, and how far the model agrees with what they settled
(pure Python, no Django, no numpy).

A question's labels are read as units (its states), each with the answers its labellers gave:

- **Cohen's κ** with exactly two labellers of a choice or a noul: over the states both labelled,
  observed agreement corrected for the agreement their own answer rates would reach by chance;
- **Krippendorff's α** with three or more, and for every score question: any number of
  labellers per state, missing labels allowed (a state labelled once counts for nothing),
  *nominal* for a choice or a noul and *ordinal* for a score, where a 4 against a 5 is a smaller
  disagreement than a 1 against a 5 (the ranks between them are few). κ on a score question
  would count both alike.

Each figure comes with n (the states it counts) and a percentile bootstrap 95 % interval over
states (`stats`' rounds, seed and level: a page reads the same twice). Resamples on which the
figure is undefined (every label the same answer) are left out of the interval; under
`FEWEST_FOR_AN_INTERVAL` states there is none, and the figure says so.

The model is read against the settled answers with the same statistic as the labellers (so
"the model agrees with the labellers as much as they agree with each other" can be read), and
each labeller, like the model, by the fraction of settled states on which they gave the settled
answer (with its Wilson interval).

Why not PyPI's `krippendorff`: it needs numpy, which the console does not otherwise carry, and
the coincidence matrix of a few answers per state is a few lines of Python (tested against
Krippendorff's own worked examples in tests/test_agreement.py).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from questions.core import stats

NOMINAL, ORDINAL = "nominal", "ordinal"
KAPPA, ALPHA = "cohen_kappa", "krippendorff_alpha"
SYMBOLS = {KAPPA: "κ", ALPHA: "α"}
NAMES = {KAPPA: "Cohen's κ", ALPHA: "Krippendorff's α"}
#: who the model's answers are read as, beside the settled answers
MODEL, SETTLED = "model", "settled"


def metric_of(qtype: str) -> str:
    """A score's levels are ordered; a choice's options and a noul's sides are not."""
    return ORDINAL if qtype == "score" else NOMINAL


def statistic_of(qtype: str, labellers: int) -> str:
    """κ for two labellers of an unordered answer; α for more, and for every score question."""
    return KAPPA if labellers <= 2 and metric_of(qtype) == NOMINAL else ALPHA


# --- the statistics ------------------------------------------------------------------------


def cohen_kappa(pairs: Iterable[tuple[Any, Any]]) -> float | None:
    """Cohen's κ of two labellers from their (first's, second's) answer per unit: (p_o − p_e)
    / (1 − p_e). None when nothing is paired or chance agreement is certain (both gave one
    and the same answer throughout: κ is 0/0)."""
    return _kappa_of(Counter(pairs))


def _kappa_of(counts: Mapping[tuple[Any, Any], int]) -> float | None:
    total = sum(counts.values())
    if not total:
        return None
    first: Counter = Counter()
    second: Counter = Counter()
    agreed = 0
    for (a, b), count in counts.items():
        first[a] += count
        second[b] += count
        agreed += count if a == b else 0
    chance = sum(first[c] * second[c] for c in first) / (total * total)
    if math.isclose(chance, 1.0):
        return None
    return (agreed / total - chance) / (1 - chance)


def krippendorff_alpha(units: Iterable[Sequence[Any]], metric: str = NOMINAL) -> float | None:
    """Krippendorff's α over units, each the answers it was given (missing ones left out):
    1 − D_o / D_e from the coincidence matrix of the pairable values (Krippendorff, "Computing
    Krippendorff's Alpha-Reliability", 2011). `metric` is NOMINAL or ORDINAL (values ordered
    as Python orders them). None when fewer than two values are pairable or nothing could
    disagree by chance (every value the same)."""
    return _alpha_of(Counter(_unit_key(u) for u in units), metric)


def _unit_key(values: Sequence[Any]) -> tuple:
    """A unit as a multiset of its values: units with the same answers, in any order, are one
    pattern (the bootstrap resamples patterns' counts)."""
    return tuple(sorted(values, key=_order))


def _order(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value) if not isinstance(value, int | float) else ("", value)


def _coincidences(pattern: tuple) -> dict[tuple[Any, Any], float]:
    """One unit's part of the coincidence matrix: each ordered pair of its values counts
    1 / (m − 1), m its number of values; a unit of one value pairs with nothing."""
    m = len(pattern)
    out: dict[tuple[Any, Any], float] = {}
    if m < 2:
        return out
    for i, c in enumerate(pattern):
        for j, k in enumerate(pattern):
            if i != j:
                out[(c, k)] = out.get((c, k), 0.0) + 1 / (m - 1)
    return out


def _alpha_of(counts: Mapping[tuple, int], metric: str, cache: dict | None = None) -> float | None:
    cache = {} if cache is None else cache
    matrix: dict[tuple[Any, Any], float] = {}
    for pattern, count in counts.items():
        if pattern not in cache:
            cache[pattern] = _coincidences(pattern)
        for cell, value in cache[pattern].items():
            matrix[cell] = matrix.get(cell, 0.0) + count * value
    marginals: dict[Any, float] = {}
    for (c, _), value in matrix.items():
        marginals[c] = marginals.get(c, 0.0) + value
    n = sum(marginals.values())
    if n <= 1:
        return None
    distance = _distances(marginals, metric)
    observed = sum(value * distance(c, k) for (c, k), value in matrix.items())
    expected = sum(
        marginals[c] * marginals[k] * distance(c, k) for c in marginals for k in marginals
    )
    if math.isclose(expected, 0.0, abs_tol=1e-12):
        return None
    return 1 - (n - 1) * observed / expected


def _distances(marginals: Mapping[Any, float], metric: str) -> Callable[[Any, Any], float]:
    """δ²: nominal, 0 for the same value and 1 for any other; ordinal, the squared number of
    pairable values ranked from one to the other (each end counting half)."""
    if metric == NOMINAL:
        return lambda c, k: 0.0 if c == k else 1.0
    ranked = sorted(marginals, key=_order)
    place = {value: i for i, value in enumerate(ranked)}
    below = [0.0]  # below[i]: the values ranked before the i-th
    for value in ranked:
        below.append(below[-1] + marginals[value])

    def ordinal(c: Any, k: Any) -> float:
        low, high = sorted((place[c], place[k]))
        between = below[high + 1] - below[low]
        return (between - (marginals[c] + marginals[k]) / 2) ** 2

    return ordinal


#: below this many states a bootstrap interval says nothing true: resampling two or three
#: states gives an interval of zero width, which reads as certainty
FEWEST_FOR_AN_INTERVAL = 10


def resampled(
    counts: Mapping[Hashable, int],
    statistic: Callable[[Mapping[Hashable, int]], float | None],
    *,
    rounds: int = stats.BOOTSTRAP_ROUNDS,
    seed: int = stats.BOOTSTRAP_SEED,
) -> stats.Interval | None:
    """The percentile bootstrap 95 % interval of `statistic` over units given as counts of
    their patterns (`stats.bootstrap`'s rule, with its rounds and seed): each round draws as
    many units as there are, with replacement — a multinomial draw of the patterns' counts —
    and reads the statistic from the drawn counts, so a round costs the number of patterns,
    not of units. Rounds on which the statistic is undefined are left out; None when every
    round is, or there is nothing to draw."""
    patterns = sorted(counts, key=repr)  # a stable order: the same draws on every read
    n = sum(counts[p] for p in patterns)
    if n < FEWEST_FOR_AN_INTERVAL:
        return None
    rng = random.Random(seed)
    estimates = []
    for _ in range(rounds):
        drawn, left, rest = {}, n, 1.0
        for place, pattern in enumerate(patterns):
            share = counts[pattern] / n
            last = place == len(patterns) - 1
            k = left if last else _binomial(rng, left, min(1.0, share / rest) if rest > 0 else 1.0)
            if k:
                drawn[pattern] = k
            left, rest = left - k, rest - share
            if not left:
                break
        value = statistic(drawn)
        if value is not None:
            estimates.append(value)
    if not estimates:
        return None
    estimates.sort()
    tail = (1 - stats.CONFIDENCE) / 2
    low = estimates[math.floor(tail * (len(estimates) - 1))]
    high = estimates[math.ceil((1 - tail) * (len(estimates) - 1))]
    return (round(low, stats.PLACES), round(high, stats.PLACES))


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A binomial draw: Python 3.12's `random.binomialvariate`, written out for 3.11 — the
    geometric method (Devroye) below a mean of 10, else Hörmann's transformed rejection with
    squeeze (BTRS), in constant time whatever n."""
    if p <= 0.0 or n <= 0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - _binomial(rng, n, 1.0 - p)
    if n * p < 10.0:
        x = y = 0
        c = math.log(1.0 - p)
        if not c:
            return x
        while True:
            y += math.floor(math.log(1.0 - rng.random()) / c) + 1
            if y > n:
                return x
            x += 1
    spq = math.sqrt(n * p * (1.0 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / (1.0 - p))
    m = math.floor((n + 1) * p)
    h = math.lgamma(m + 1) + math.lgamma(n - m + 1)
    while True:
        u = rng.random() - 0.5
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        v = rng.random()
        if us >= 0.07 and v <= vr:
            return k
        v *= alpha / (a / (us * us) + b)
        if v > 0 and math.log(v) <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - m) * lpq:
            return k


# --- what a page and the command line show ------------------------------------------------


def _number(value: float) -> str:
    """Two places, a true minus sign: 0.71, −0.12."""
    text = f"{value:.2f}"
    return "−" + text[1:] if text.startswith("-") else text


@dataclass(frozen=True)
class Agreement:
    """One agreement figure: which statistic, on which metric, its value and 95 % interval,
    n (the states it counts), how many labellers it reads, and — when it has no value — why,
    in words."""

    statistic: str
    metric: str
    value: float | None
    interval: stats.Interval | None
    n: int
    labellers: int
    why: str = ""

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.statistic]

    @property
    def name(self) -> str:
        ordinal = ", ordinal" if self.metric == ORDINAL else ""
        return NAMES[self.statistic] + ordinal

    def as_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "metric": self.metric,
            "value": None if self.value is None else round(self.value, stats.PLACES),
            "interval": list(self.interval) if self.interval else None,
            "n": self.n,
            "labellers": self.labellers,
            "why": self.why,
            "words": self.words(),
        }

    def words(self) -> str:
        """ "κ 0.71 [0.62, 0.79], n 120"; "ordinal α …" for a score; the reason when there is
        no value."""
        if self.value is None:
            return self.why
        head = f"{'ordinal ' if self.metric == ORDINAL else ''}{self.symbol} {_number(self.value)}"
        if self.interval is None and self.n < FEWEST_FOR_AN_INTERVAL:
            return f"{head} (too few states for an interval), n {self.n}"
        if self.interval is None:
            return f"{head} (no interval), n {self.n}"
        low, high = self.interval
        return f"{head} [{_number(low)}, {_number(high)}], n {self.n}"


def _undefined_why(symbol: str, answers: Iterable[Any]) -> str:
    seen = sorted({_show(a) for a in answers})
    if len(seen) == 1:
        return f"{symbol} undefined: every label is {seen[0]}, so agreement is all chance"
    return f"{symbol} undefined on these labels"


def _show(answer: Any) -> str:
    if isinstance(answer, bool):
        return "true" if answer else "false"
    return str(answer)


def agreement(
    units: Iterable[Mapping[Any, Any]], qtype: str, *, statistic: str | None = None
) -> Agreement:
    """The agreement of the labellers of one question: `units` are its states, each mapping a
    labeller (any hashable, named by `str`) to their answer. The statistic follows from the
    question's type and the labellers' number (`statistic_of`) unless given."""
    units = [dict(u) for u in units if u]
    labellers = sorted({who for u in units for who in u}, key=str)
    metric = metric_of(qtype)
    chosen = statistic or statistic_of(qtype, len(labellers))
    symbol = SYMBOLS[chosen]

    def nothing(n: int, why: str) -> Agreement:
        return Agreement(chosen, metric, None, None, n, len(labellers), why)

    if not labellers:
        return nothing(0, "no labels yet")
    if len(labellers) == 1:
        return nothing(0, f"one labeller ({labellers[0]}): agreement needs two")
    if chosen == KAPPA:
        if len(labellers) != 2:
            raise ValueError(f"Cohen's κ reads two labellers, not {len(labellers)}")
        first, second = labellers
        pairs = Counter((u[first], u[second]) for u in units if first in u and second in u)
        n = sum(pairs.values())
        if not n:
            return nothing(0, f"no state was labelled by both {first} and {second}")
        value = _kappa_of(pairs)
        if value is None:
            return nothing(n, _undefined_why(symbol, (a for pair in pairs for a in pair)))
        return Agreement(chosen, metric, value, resampled(pairs, _kappa_of), n, len(labellers))
    patterns = Counter(_unit_key(list(u.values())) for u in units if len(u) >= 2)
    n = sum(patterns.values())
    if not n:
        return nothing(0, "no state was labelled by two labellers")
    cache: dict = {}

    def alpha(counts: Mapping[tuple, int]) -> float | None:
        return _alpha_of(counts, metric, cache)

    value = alpha(patterns)
    if value is None:
        return nothing(n, _undefined_why(symbol, (a for p in patterns for a in p)))
    return Agreement(chosen, metric, value, resampled(patterns, alpha), n, len(labellers))


@dataclass(frozen=True)
class Match:
    """How often one labeller (or the model) gave the settled answer: `agreed` of `n` settled
    states they answered, with its Wilson interval and its words."""

    who: str
    agreed: int
    n: int

    @property
    def fraction(self) -> float | None:
        return round(self.agreed / self.n, stats.PLACES) if self.n else None

    @property
    def interval(self) -> stats.Interval | None:
        return stats.wilson(self.agreed, self.n)

    @property
    def rate(self) -> str:
        """ "90% (60–98%, n = 10)", or why there is none."""
        return stats.rate_words(self.agreed, self.n) if self.n else "no settled state to compare"

    def words(self) -> str:
        if not self.n:
            return self.rate
        return f"gave the settled answer on {self.rate}"

    def as_dict(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "who": self.who,
            "agreed": self.agreed,
            "n": self.n,
            "fraction": self.fraction,
            "interval": list(interval) if interval else None,
            "words": self.words(),
        }


def matches(units: Mapping[Any, Mapping[Any, Any]], settled: Mapping[Any, Any]) -> list[Match]:
    """Per labeller (by name), on the settled states they labelled, how often theirs was the
    settled answer. `units` maps a state to its labels (labeller → answer)."""
    agreed: Counter = Counter()
    counted: Counter = Counter()
    for state, labels in units.items():
        if state not in settled:
            continue
        for who, answer in labels.items():
            counted[str(who)] += 1
            agreed[str(who)] += _same(answer, settled[state])
    return [Match(who, agreed[who], counted[who]) for who in sorted(counted)]


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)


@dataclass(frozen=True)
class QuestionAgreement:
    """One question's agreement: the labellers' figure, each labeller against the settled
    answers, the model against them (the same statistic, and as a fraction), and how many of
    its states are settled, disputed, ambiguous or open."""

    question: str
    qtype: str
    labellers: Agreement
    per_labeller: list[Match]
    model: Agreement | None
    model_match: Match | None
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "type": self.qtype,
            "counts": dict(self.counts),
            "labellers": self.labellers.as_dict(),
            "per_labeller": [m.as_dict() for m in self.per_labeller],
            "model": None if self.model is None else self.model.as_dict(),
            "model_match": None if self.model_match is None else self.model_match.as_dict(),
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """ "labels: 120 settled, 14 disputed, κ 0.71 [0.62, 0.79]" — the line the scorecard and
        the review's evidence show."""
        counted = [f"{self.counts.get('settled', 0)} settled"]
        counted += [
            f"{self.counts[status]} {status}"
            for status in ("disputed", "ambiguous")
            if self.counts.get(status)
        ]
        figure = self.labellers
        said = figure.why if figure.value is None else figure.words().rsplit(", n ", 1)[0]
        return f"labels: {', '.join(counted)}, {said}"


def question_agreement(
    question: str,
    qtype: str,
    labels: Mapping[Any, Mapping[Any, Any]],
    settled: Mapping[Any, Any],
    model: Mapping[Any, Any] | None = None,
    counts: Mapping[str, int] | None = None,
) -> QuestionAgreement:
    """Everything agreement says of one question: `labels` maps each state to its current
    labels (labeller → answer), `settled` a state to its settled answer, `model` a state to
    the model's answer (None: no finished run to read), `counts` the states per status."""
    figure = agreement(labels.values(), qtype)
    model_figure = model_match = None
    if model is not None:
        both = [{MODEL: model[s], SETTLED: settled[s]} for s in settled if s in model]
        statistic = statistic_of(qtype, max(2, figure.labellers))
        model_figure = agreement(both, qtype, statistic=statistic)
        if not both:
            model_figure = Agreement(
                statistic, metric_of(qtype), None, None, 0, 2, "the model answered no settled state"
            )
        model_match = Match(MODEL, sum(_same(u[MODEL], u[SETTLED]) for u in both), len(both))
    return QuestionAgreement(
        question,
        qtype,
        figure,
        matches(labels, settled),
        model_figure,
        model_match,
        dict(counts or {}),
    )
