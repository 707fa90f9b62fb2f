"""Pass rates with their noise and paired verdicts, through the reads that pages and commands
share: hand-made runs whose verdicts are known."""

from __future__ import annotations

import pytest

from questions import selectors, stats
from tests import factories
from tests.helpers import ADVICE_DOC, paired_runs

pytestmark = pytest.mark.django_db


def _set():
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=ADVICE_DOC)
    return qs, qs.versions.get(), writer


def test_paired_verdict_better_when_ten_states_are_fixed_and_none_broken():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 10 + [(True, True)] * 4)
    found = selectors.paired_verdicts(before, after)
    assert set(found) == {"overall", "urgent", "desk", "anger"}
    urgent = found["urgent"]
    assert (urgent.n, urgent.better, urgent.worse) == (14, 10, 0)
    assert urgent.p_value == stats.mcnemar(10, 0) == pytest.approx(0.001953, abs=1e-6)
    assert urgent.verdict == stats.BETTER
    assert found["overall"].verdict == stats.BETTER  # desk passes in both: the state is urgent's
    assert found["desk"].verdict == stats.NO_DIFFERENCE and found["desk"].n == 14
    assert found["anger"].n == 0  # nothing labelled: no verdict
    assert found["urgent"].as_dict() == {
        "n": 14,
        "before": round(4 / 14, 4),
        "after": 1.0,
        "p_value": urgent.p_value,
        "verdict": "better",
        "better": 10,
        "worse": 0,
    }


def test_paired_verdict_worse_and_the_opposite_direction():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(True, False)] * 8)
    assert selectors.paired_verdicts(before, after)["urgent"].verdict == stats.WORSE
    assert selectors.paired_verdicts(after, before)["urgent"].verdict == stats.BETTER


def test_no_difference_detected_when_a_few_states_move_both_ways():
    qs, version, writer = _set()
    outcomes = [(False, True)] * 3 + [(True, False)] * 1 + [(True, True)] * 4
    before, after = paired_runs(qs, version, writer, outcomes)
    urgent = selectors.paired_verdicts(before, after)["urgent"]
    assert urgent.verdict == stats.NO_DIFFERENCE
    assert urgent.p_value == 0.625
    assert urgent.words() == "no difference detected on 8 states (3 fixed, 1 broken, p = 0.62)"


def test_only_states_both_runs_checked_count():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 6)
    after.items.filter(sample_state__sample_state__name="s000").delete()
    assert selectors.paired_verdicts(before, after)["urgent"].n == 5
