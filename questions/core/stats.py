"""The statistics behind every verdict: pass rates with their noise, and paired comparisons.

Pure Python, no dependency. One place owns each fact: the confidence level of every interval the
console shows (95 %), the significance level of a paired verdict (5 %), and the words a verdict is
said in. Everything that shows or prints a pass rate takes its interval from here.

- `wilson(passed, n)` — the Wilson score interval of a pass rate: unlike the normal approximation
  it stays inside [0, 1] and is honest at small n (3 of 3 passed is 44–100 %, not 100–100 %).
- `mcnemar(better, worse)` — McNemar's exact test on the states two runs both checked: only the
  discordant states (passed in one run, failed in the other) carry information; under "no
  difference" each is a fair coin, so the two-sided p-value is a binomial tail.
- `paired(before, after)` — the verdict on two runs' pass/fail per state: `better`, `worse` or
  `no_difference_detected`, with the numbers that back it, and the change of pass rate with its
  paired interval (`paired_difference`); `pooled(verdicts)` adds verdicts on disjoint pairs up
  (every question's into the overall one: the pairs an overall pass rate counts).
- `paired_difference(...)` — Newcombe's hybrid score interval of the difference between two
  paired pass rates (his method 10): each rate's Wilson interval, joined through the
  correlation of the pairs, so it stays inside [−1, 1], is honest at small n, and is no
  degenerate 0–0 when nothing moved.
- `bootstrap(values, statistic)` — a percentile bootstrap interval for statistics without a
  closed form (calibration error, log loss), with a fixed seed so a page reads the same twice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95
# The two-sided normal quantile of CONFIDENCE: 1.96 (to more places, so intervals match tables).
Z = 1.959963984540054
SIGNIFICANCE = 0.05
BOOTSTRAP_ROUNDS = 1000
BOOTSTRAP_SEED = 20261201
PLACES = 4

BETTER = "better"
WORSE = "worse"
NO_DIFFERENCE = "no_difference_detected"
VERDICTS = (BETTER, WORSE, NO_DIFFERENCE)

Interval = tuple[float, float]


def _wilson_bounds(passed: int, n: int) -> Interval:
    """The 95 % Wilson score interval of `passed` out of `n` (n > 0), unrounded."""
    if not 0 <= passed <= n:
        raise ValueError(f"passed must be between 0 and n ({n}), got {passed}")
    p = passed / n
    z2 = Z * Z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def wilson(passed: int, n: int) -> Interval | None:
    """The 95 % Wilson score interval of `passed` out of `n`, or None when nothing was checked."""
    if n <= 0:
        return None
    low, high = _wilson_bounds(passed, n)
    return (round(low, PLACES), round(high, PLACES))


def interval_list(passed: int, n: int) -> list[float] | None:
    """`wilson` as JSON carries it: `pass_rate_interval: [low, high]` (null when n is 0)."""
    found = wilson(passed, n)
    return list(found) if found else None


def mcnemar(better: int, worse: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts.

    `better`: states that failed before and pass after; `worse`: passed before, fail after.
    With no discordant state there is no evidence either way: p = 1.
    """
    if better < 0 or worse < 0:
        raise ValueError("discordant counts cannot be negative")
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return round(min(1.0, 2 * tail), 6)


def paired_difference(both: int, broken: int, fixed: int, neither: int) -> Interval | None:
    """The 95 % interval of `after − before`, the change of pass rate between two runs on the
    same pairs, from the paired counts: passed in `both` runs, passed before only (`broken`),
    after only (`fixed`), in `neither`. Newcombe's hybrid score interval for paired data
    (Statistics in Medicine 17, 1998, method 10): each run's Wilson interval, joined through
    the correlation of the two runs' outcomes (phi, corrected towards 0 when positive). None
    when no pair was checked."""
    if min(both, broken, fixed, neither) < 0:
        raise ValueError("paired counts cannot be negative")
    n = both + broken + fixed + neither
    if n == 0:
        return None
    before, after = (both + broken) / n, (both + fixed) / n
    low_b, high_b = _wilson_bounds(both + broken, n)
    low_a, high_a = _wilson_bounds(both + fixed, n)
    margins = (both + broken) * (fixed + neither) * (both + fixed) * (broken + neither)
    phi = 0.0
    if margins:
        cross = both * neither - broken * fixed
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    difference = after - before
    down = (after - low_a) ** 2 - 2 * phi * (after - low_a) * (high_b - before)
    down += (high_b - before) ** 2
    up = (high_a - after) ** 2 - 2 * phi * (high_a - after) * (before - low_b)
    up += (before - low_b) ** 2
    low = max(-1.0, difference - math.sqrt(max(0.0, down)))
    high = min(1.0, difference + math.sqrt(max(0.0, up)))
    return (round(low, PLACES), round(high, PLACES))


#: what a paired verdict counts: a state (one question's verdict), or a question–state pair
#: (the overall one, `pooled`)
STATE = "state"
PAIR = "question–state pair"


@dataclass(frozen=True)
class Paired:
    """Two runs on what both checked (`unit`s: states, or question–state pairs): counts, pass
    rates, the verdict, and the change of pass rate with its paired interval."""

    n: int
    passed_before: int
    passed_after: int
    better: int
    worse: int
    p_value: float
    unit: str = STATE

    @property
    def before(self) -> float | None:
        return round(self.passed_before / self.n, PLACES) if self.n else None

    @property
    def after(self) -> float | None:
        return round(self.passed_after / self.n, PLACES) if self.n else None

    @property
    def verdict(self) -> str:
        if self.p_value >= SIGNIFICANCE:
            return NO_DIFFERENCE
        return BETTER if self.better > self.worse else WORSE

    @property
    def difference(self) -> float | None:
        """after − before, as a fraction: the change of pass rate on what both checked."""
        return round((self.passed_after - self.passed_before) / self.n, PLACES) if self.n else None

    @property
    def difference_interval(self) -> Interval | None:
        """The difference's 95 % paired interval (`paired_difference`)."""
        both = self.passed_before - self.worse
        neither = self.n - both - self.better - self.worse
        return paired_difference(both, self.worse, self.better, neither)

    def as_dict(self) -> dict[str, Any]:
        interval = self.difference_interval
        return {
            "n": self.n,
            "unit": self.unit,
            "before": self.before,
            "after": self.after,
            "difference": self.difference,
            "difference_interval": list(interval) if interval else None,
            "p_value": self.p_value,
            "verdict": self.verdict,
            "better": self.better,
            "worse": self.worse,
        }

    def words(self) -> str:
        """The verdict in words, never a bare difference of points."""
        counted = plural(self.n, self.unit)
        if self.n == 0:
            return f"no {self.unit} was checked by both runs: no paired verdict"
        moved = f"{self.better} fixed, {self.worse} broken"
        if self.verdict == NO_DIFFERENCE:
            return f"no difference detected on {counted} ({moved}, p = {self.p_value:.2g})"
        return f"{self.verdict} on {counted} ({moved}, p = {self.p_value:.2g})"

    def difference_words(self) -> str:
        """The change of pass rate in points with its paired interval: "+6.7 points (−3.9 to
        +17.0)"; "" when nothing was checked by both."""
        interval = self.difference_interval
        if interval is None or self.difference is None:
            return ""
        low, high = interval
        return f"{_points(self.difference)} points ({_points(low)} to {_points(high)})"


def paired(pairs: Sequence[tuple[bool, bool]]) -> Paired:
    """The paired verdict on (passed before, passed after) per state both runs checked."""
    better = sum(1 for was, now in pairs if not was and now)
    worse = sum(1 for was, now in pairs if was and not now)
    return Paired(
        n=len(pairs),
        passed_before=sum(1 for was, _ in pairs if was),
        passed_after=sum(1 for _, now in pairs if now),
        better=better,
        worse=worse,
        p_value=mcnemar(better, worse),
    )


def pooled(verdicts: Iterable[Paired], unit: str = PAIR) -> Paired:
    """Paired verdicts on disjoint pairs added up into one: every question's verdict on its
    states gives the overall one on every question–state pair both runs checked (the pairs an
    overall pass rate counts), with McNemar's test over all the discordant pairs."""
    found = list(verdicts)
    better, worse = sum(p.better for p in found), sum(p.worse for p in found)
    return Paired(
        n=sum(p.n for p in found),
        passed_before=sum(p.passed_before for p in found),
        passed_after=sum(p.passed_after for p in found),
        better=better,
        worse=worse,
        p_value=mcnemar(better, worse),
        unit=unit,
    )


def paired_by_key(before: Mapping[Any, bool], after: Mapping[Any, bool]) -> Paired:
    """`paired` over the keys (states) both mappings checked, in a stable order."""
    shared = sorted(set(before) & set(after), key=str)
    return paired([(before[key], after[key]) for key in shared])


def bootstrap(
    values: Sequence[Any],
    statistic: Callable[[Sequence[Any]], float],
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = BOOTSTRAP_SEED,
) -> Interval | None:
    """The percentile bootstrap 95 % interval of `statistic` over `values` (None when empty)."""
    if not values:
        return None
    rng = random.Random(seed)
    n = len(values)
    estimates = sorted(
        statistic([values[rng.randrange(n)] for _ in range(n)]) for _ in range(rounds)
    )
    tail = (1 - CONFIDENCE) / 2
    low = estimates[math.floor(tail * (rounds - 1))]
    high = estimates[math.ceil((1 - tail) * (rounds - 1))]
    return (round(low, PLACES), round(high, PLACES))


def _points(fraction: float) -> str:
    """A change of pass rate in percentage points, signed, one decimal: +6.7, −3.9, 0.0."""
    points = round(100 * fraction, 1)
    if not points:
        return "0.0"
    return f"+{points:.1f}" if points > 0 else f"−{-points:.1f}"


class Rated:
    """What holds `passed` of `checked` (a report, a question's, a tag's slice, a gate's
    measure): its pass rate, its interval as JSON carries it, and its words."""

    passed: int
    checked: int

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.checked if self.checked else None

    @property
    def pass_rate_interval(self) -> list[float] | None:
        return interval_list(self.passed, self.checked)

    @property
    def words(self) -> str:
        return rate_words(self.passed, self.checked)


@dataclass(frozen=True)
class Rate(Rated):
    """`passed` of `checked`, its interval and its words: a run's overall figure; `left_out`
    the question–state pairs a reviewer marked ambiguous, which no pass rate counts."""

    passed: int
    checked: int
    left_out: int = 0


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def rate_words(passed: int, n: int) -> str:
    """A pass rate as every page and command says it: "62% (36–82%, n = 13)"."""
    found = wilson(passed, n)
    if found is None:
        return "nothing checked"
    low, high = found
    return f"{passed / n:.0%} ({round(100 * low)}–{high:.0%}, n = {n})"
