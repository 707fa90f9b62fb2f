"""The statistics against hand-worked values: Wilson intervals, McNemar's exact test, bootstrap."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from questions.core import stats


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [
        # p = 1, n = 3: centre (1 + z²/6) / (1 + z²/3) = 0.7192, half 0.2808 → 0.4385–1.
        (3, 3, 0.4385, 1.0),
        # The tables' classic rows (e.g. Newcombe 1998, method 3).
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (1, 29, 0.0061, 0.1718),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_matches_hand_worked_values(passed, n, low, high):
    assert stats.wilson(passed, n) == pytest.approx((low, high), abs=1e-4)


def test_wilson_says_nothing_when_nothing_was_checked():
    assert stats.wilson(0, 0) is None
    assert stats.interval_list(0, 0) is None
    assert stats.rate_words(0, 0) == "nothing checked"


def test_wilson_refuses_impossible_counts():
    with pytest.raises(ValueError):
        stats.wilson(4, 3)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_holds_the_rate_and_stays_in_the_unit_interval(counts):
    passed, n = counts
    low, high = stats.wilson(passed, n)
    assert 0 <= low <= passed / n + 1e-4 and passed / n - 1e-4 <= high <= 1
    # More states, same rate: never a wider interval.
    wider = stats.wilson(passed * 2, n * 2)
    assert wider[1] - wider[0] <= high - low + 1e-4


@pytest.mark.parametrize(
    ("better", "worse", "p_value"),
    [
        (0, 0, 1.0),  # nothing discordant: no evidence
        (6, 1, 0.125),  # 2 × (C(7,0) + C(7,1)) / 2^7 = 2 × 8/128
        (6, 0, 0.03125),  # 2 × 1/64
        (5, 0, 0.0625),  # 2 × 1/32: five fixed and none broken is not yet enough
        (3, 3, 1.0),
        (0, 10, 2 / 1024),
    ],
)
def test_mcnemar_exact_matches_hand_worked_values(better, worse, p_value):
    assert stats.mcnemar(better, worse) == pytest.approx(p_value, abs=1e-6)


def test_paired_verdicts_and_their_words():
    fixed = [(False, True)] * 6 + [(True, True)] * 2
    found = stats.paired(fixed)
    assert found.as_dict() == {
        "n": 8,
        "unit": "state",
        "before": 0.25,
        "after": 1.0,
        "difference": 0.75,
        "difference_interval": list(stats.paired_difference(2, 0, 6, 0)),
        "p_value": 0.03125,
        "verdict": "better",
        "better": 6,
        "worse": 0,
    }
    assert found.words() == "better on 8 states (6 fixed, 0 broken, p = 0.031)"
    assert found.difference_words().startswith("+75.0 points (+")

    broken = stats.paired([(True, False)] * 6)
    assert broken.verdict == stats.WORSE

    # v3 at 20 % against its parent's 27 % on 15 states: one state apart, no verdict.
    close = stats.paired([(True, True)] * 3 + [(True, False)] + [(False, False)] * 11)
    assert close.verdict == stats.NO_DIFFERENCE
    assert close.words() == "no difference detected on 15 states (0 fixed, 1 broken, p = 1)"

    assert stats.paired([]).words().startswith("no state was checked by both runs")


def test_paired_by_key_reads_only_the_states_both_checked():
    before = {"a": True, "b": False, "c": True}
    after = {"b": True, "c": True, "d": False}
    found = stats.paired_by_key(before, after)
    assert (found.n, found.better, found.worse) == (2, 1, 0)


def test_bootstrap_brackets_the_mean_and_reads_the_same_twice():
    values = [0.0] * 30 + [1.0] * 70
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    first = stats.bootstrap(values, mean)
    assert first == stats.bootstrap(values, mean)
    low, high = first
    assert low < 0.7 < high
    # Close to the Wilson interval at this size (about ±0.09).
    assert math.isclose(high - low, 0.18, abs_tol=0.04)
    assert stats.bootstrap([], mean) is None


def test_rate_words():
    assert stats.rate_words(8, 13) == "62% (36–82%, n = 13)"


@pytest.mark.parametrize(
    ("both", "broken", "fixed", "neither", "low", "high"),
    [
        # Cavo et al. 2012 as Fagerland, Lydersen & Laake's contingencytables package (chapter
        # 8) gives Newcombe's square-and-add interval: p1+ − p+1 = −0.0621 (−0.1186 to
        # −0.0046); after − before is its mirror.
        (59, 6, 16, 80, 0.0046, 0.1186),
        (59, 16, 6, 80, -0.1186, -0.0046),
    ],
)
def test_the_paired_difference_matches_a_published_interval(
    both, broken, fixed, neither, low, high
):
    assert stats.paired_difference(both, broken, fixed, neither) == pytest.approx(
        (low, high), abs=1e-4
    )


def test_the_paired_difference_is_no_zero_width_interval_when_nothing_moved():
    low, high = stats.paired_difference(15, 0, 0, 0)
    assert low < 0 < high and low == -high
    assert stats.paired_difference(0, 0, 0, 0) is None
    with pytest.raises(ValueError):
        stats.paired_difference(1, -1, 0, 0)


@given(
    st.tuples(*[st.integers(0, 60)] * 4).filter(lambda counts: sum(counts) > 0),
)
def test_the_paired_difference_holds_the_difference_and_stays_within_one(counts):
    both, broken, fixed, neither = counts
    n = sum(counts)
    low, high = stats.paired_difference(*counts)
    assert -1 <= low <= (fixed - broken) / n + 1e-4 and (fixed - broken) / n - 1e-4 <= high <= 1
    # the other way round, the same interval mirrored
    assert stats.paired_difference(both, fixed, broken, neither) == (-high, -low)


def test_pooled_verdicts_add_up_the_pairs_and_test_every_discordant_one():
    desk = stats.paired([(False, True)] * 4 + [(True, False)] + [(True, True)] * 10)
    urgent = stats.paired([(True, True)] * 10 + [(False, False)] * 5)
    overall = stats.pooled([desk, urgent])
    assert (overall.n, overall.passed_before, overall.passed_after) == (30, 21, 24)
    assert (overall.better, overall.worse, overall.p_value) == (4, 1, stats.mcnemar(4, 1))
    assert overall.unit == stats.PAIR
    assert overall.words() == (
        "no difference detected on 30 question–state pairs (4 fixed, 1 broken, p = 0.38)"
    )
    assert overall.difference_words() == "+10.0 points (−5.8 to +25.7)"
    assert stats.pooled([]).words() == (
        "no question–state pair was checked by both runs: no paired verdict"
    )
