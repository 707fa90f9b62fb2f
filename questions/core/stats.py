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
  `no_difference_detected`, with the numbers that back it.
- `bootstrap(values, statistic)` — a percentile bootstrap interval for statistics without a
  closed form (calibration error, log loss), with a fixed seed so a page reads the same twice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
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


def wilson(passed: int, n: int) -> Interval | None:
    """The 95 % Wilson score interval of `passed` out of `n`, or None when nothing was checked."""
    if n <= 0:
        return None
    if not 0 <= passed <= n:
        raise ValueError(f"passed must be between 0 and n ({n}), got {passed}")
    p = passed / n
    z2 = Z * Z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (round(max(0.0, centre - half), PLACES), round(min(1.0, centre + half), PLACES))


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


@dataclass(frozen=True)
class Paired:
    """Two runs on the states both checked: counts, pass rates and the verdict."""

    n: int
    passed_before: int
    passed_after: int
    better: int
    worse: int
    p_value: float

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

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "before": self.before,
            "after": self.after,
            "p_value": self.p_value,
            "verdict": self.verdict,
            "better": self.better,
            "worse": self.worse,
        }

    def words(self) -> str:
        """The verdict in words, never a bare difference of points."""
        states = plural(self.n, "state")
        if self.n == 0:
            return "no state was checked by both runs: no paired verdict"
        moved = f"{self.better} fixed, {self.worse} broken"
        if self.verdict == NO_DIFFERENCE:
            return f"no difference detected on {states} ({moved}, p = {self.p_value:.2g})"
        return f"{self.verdict} on {states} ({moved}, p = {self.p_value:.2g})"


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def rate_words(passed: int, n: int) -> str:
    """A pass rate as every page and command says it: "62% (36–82%, n = 13)"."""
    found = wilson(passed, n)
    if found is None:
        return "nothing checked"
    low, high = found
    return f"{passed / n:.0%} ({round(100 * low)}–{high:.0%}, n = {n})"
