"""Flips, distances, pass rules and every metric against values computed by hand."""

import pytest

from questions.core import charts, deltas, metrics
from questions.core.metrics import Case


def choice(chosen, **p):
    return {"type": "choice", "choice": chosen, "probabilities": p, "confidence": 0.5}


def score(s, *p):
    return {"type": "score", "score": s, "probabilities": {str(i): x for i, x in enumerate(p)}}


def noul(p):
    return {"type": "noul", "noul": p}


def test_flips():
    assert metrics.flipped("choice", choice("a", a=0.6, b=0.4), choice("b", a=0.4, b=0.6))
    assert not metrics.flipped("choice", choice("a", a=0.6, b=0.4), choice("a", a=0.9, b=0.1))
    assert metrics.flipped("score", score(1.4, 0, 1, 0), score(1.6, 0, 1, 0))  # 1 → 2
    assert not metrics.flipped("score", score(1.1, 0, 1, 0), score(1.49, 0, 1, 0))
    assert metrics.flipped("noul", noul(0.49), noul(0.5))
    assert not metrics.flipped("noul", noul(0.49), noul(0.5), threshold=0.7)
    assert metrics.flipped("noul", noul(0.69), noul(0.71), threshold=0.7)


def test_distances_by_hand():
    a, b = choice("x", x=0.7, y=0.2, z=0.1), choice("y", x=0.2, y=0.7, z=0.1)
    assert metrics.distance("choice", a, b) == pytest.approx(0.5)  # (0.5 + 0.5 + 0) / 2
    assert metrics.distance(
        "score", score(1, 0.1, 0.8, 0.1), score(1.2, 0.0, 0.8, 0.2)
    ) == pytest.approx(0.1)
    assert metrics.distance("noul", noul(0.9), noul(0.35)) == pytest.approx(0.55)
    assert metrics.distance("choice", a, a) == 0


@pytest.mark.parametrize(
    ("qtype", "answer", "expected", "result"),
    [
        ("choice", choice("a", a=1), "a", True),
        ("choice", choice("a", a=1), "b", False),
        ("score", score(1.49, 0, 1), 1, True),
        # exactly between: the nearest level going up, as the charts and the confusion read it
        ("score", score(1.5, 0, 1), 1, False),
        ("score", score(1.5, 0, 1), 2, True),
        ("score", score(0.51, 0, 1), 1, True),
        ("noul", noul(0.5), True, True),
        ("noul", noul(0.49), True, False),
        ("noul", noul(0.49), False, True),
        ("noul", noul(0.5), False, False),
    ],
)
def test_pass_rules(qtype, answer, expected, result):
    assert metrics.passes(qtype, answer, expected) is result


def test_noul_threshold_is_settable():
    assert metrics.passes("noul", noul(0.6), True, threshold=0.7) is False
    assert metrics.passes("noul", noul(0.6), False, threshold=0.7) is True


def test_report_by_hand():
    cases = [
        Case("s1", "c", "choice", choice("a", a=0.8, b=0.2), "a"),  # pass, p=0.8
        Case("s2", "c", "choice", choice("a", a=0.6, b=0.4), "b"),  # fail, p=0.6
        Case("s3", "c", "choice", choice("b", a=0.3, b=0.7), "b"),  # pass, p=0.7
        Case("s1", "s", "score", score(1.2, 0, 0.8, 0.2), 1),  # pass, |0.2|
        Case("s2", "s", "score", score(0.4, 0.6, 0.4, 0), 2),  # fail, |1.6|
        Case("s1", "n", "noul", noul(0.9), True),  # pass
        Case("s2", "n", "noul", noul(0.2), True),  # fail
        Case("s3", "n", "noul", noul(0.3), None),  # not checked
    ]
    r = metrics.report(cases)
    assert (r.checked, r.passed) == (7, 4)
    assert r.pass_rate == pytest.approx(4 / 7)
    assert r.questions["c"].pass_rate == pytest.approx(2 / 3)
    assert r.questions["c"].confusion == {"a": {"a": 1}, "b": {"a": 1, "b": 1}}
    assert r.questions["s"].mae == pytest.approx((0.2 + 1.6) / 2)
    assert r.questions["n"].checked == 2
    # Brier, noul: ((0.9-1)^2 + (0.2-1)^2) / 2 = (0.01 + 0.64) / 2
    assert r.noul_calibration.brier == pytest.approx(0.325)
    # ECE, noul: bin 0.9 (p .9, freq 1) and bin 0.2 (p .2, freq 1): (.1 + .8) / 2
    assert r.noul_calibration.ece == pytest.approx(0.45)
    # choice top option: (0.8, ok), (0.6, wrong), (0.7, ok)
    assert r.choice_calibration.brier == pytest.approx((0.04 + 0.36 + 0.09) / 3)
    assert r.choice_calibration.ece == pytest.approx((0.2 + 0.6 + 0.3) / 3)
    bins = {b.low: b for b in r.choice_calibration.bins if b.count}
    assert sorted(bins) == [0.6, 0.7, 0.8]
    assert all(b.sparse for b in bins.values())


def test_calibration_bins_and_sparse_marks():
    pairs = [(0.95, True)] * 9 + [(0.95, False)] + [(0.05, False)] * 6
    c = metrics.calibration(pairs)
    top = c.bins[9]
    assert (top.count, top.frequency, top.sparse) == (10, 0.9, False)
    assert c.bins[0].count == 6 and not c.bins[0].sparse
    assert c.ece == pytest.approx((10 * 0.05 + 6 * 0.05) / 16)
    assert metrics.calibration([]).brier is None


def test_no_expected_answers_means_no_pass_rate():
    r = metrics.report([Case("s", "n", "noul", noul(0.4))])
    assert r.pass_rate is None and r.questions["n"].pass_rate is None


def test_expected_answers_of_the_wrong_shape_are_not_checked():
    r = metrics.report(
        [Case("s", "n", "noul", noul(0.4), "yes"), Case("s", "s", "score", score(1, 0, 1), True)]
    )
    assert r.checked == 0


def test_compare_runs_lists_regressions_and_fixes_first():
    before = [
        Case("s1", "n", "noul", noul(0.9), True),
        Case("s2", "n", "noul", noul(0.1), True),
        Case("s3", "n", "noul", noul(0.9), True),
        Case("s4", "n", "noul", noul(0.1), True),
    ]
    after = [
        Case("s1", "n", "noul", noul(0.1), True),
        Case("s2", "n", "noul", noul(0.9), True),
        Case("s3", "n", "noul", noul(0.8), True),
        Case("s4", "n", "noul", noul(0.2), True),
    ]
    delta = deltas.compare_runs(before, after)
    # s3 and s4 did not flip nor change their check: not listed
    assert [(c.state, c.kind) for c in delta.changes] == [("s1", "regression"), ("s2", "fix")]
    assert (delta.checked, delta.passed_before, delta.passed_after) == (4, 2, 2)
    assert delta.delta == 0
    assert metrics.shown("noul", delta.changes[0].before) == "true 0.90"
    assert metrics.shown("noul", delta.changes[0].after) == "false 0.10"


def test_compare_runs_lists_flips_without_expected_answers_after_the_fixes():
    before = [
        Case("s1", "c", "choice", choice("a", a=0.8, b=0.2)),
        Case("s2", "n", "noul", noul(0.9), True),
    ]
    after = [
        Case("s1", "c", "choice", choice("b", a=0.3, b=0.7)),
        Case("s2", "n", "noul", noul(0.2), True),
    ]
    delta = deltas.compare_runs(before, after)
    assert [(c.state, c.kind) for c in delta.changes] == [("s2", "regression"), ("s1", "flip")]
    assert delta.delta == -1.0
    assert metrics.shown("choice", delta.changes[1].after) == "b 0.70"


def test_a_score_gets_a_confusion_matrix_over_its_levels():
    r = metrics.report([Case("s1", "s", "score", score(1.6, 0, 0.4, 0.6), 1)])
    assert r.questions["s"].confusion == {"1": {"2": 1}}


def test_summarize_counts_checks_misses_and_failed_states():
    rows = [
        (1, "answered", {"n": True, "c": "a"}, {"n": noul(0.9), "c": choice("b", a=0.4, b=0.6)}),
        (2, "answered", {}, {"n": noul(0.1)}),
        (3, "failed", {"n": True}, None),
    ]
    s = metrics.summarize(rows)
    assert (s.checked, s.passed, s.failed_states) == (2, 1, 1)
    assert s.misses == {1: 1, 2: 0}


@pytest.mark.parametrize(("s", "level"), [(0.5, 1), (1.5, 2), (2.5, 3)])
def test_the_chart_marks_the_level_the_metrics_count_at_halves(s, level):
    answer = {
        "type": "score",
        "score": s,
        "probabilities": {"0": 0.25, "1": 0.25, "2": 0.25, "3": 0.25},
        "legend": {str(i): f"L{i}" for i in range(4)},
        "confidence": 0.5,
    }
    svg = charts.score_bar_chart("q", answer, 4)
    assert metrics.nearest_level(s) == level
    assert f"▶ {level} L{level}<" in svg
    assert svg.count("▶") == 1


def test_comparing_readings_agrees_with_comparing_whole_answers():
    qtypes = {"c": "choice", "s": "score", "n": "noul"}
    before_answers = {
        "s1": {"c": choice("a", a=0.8, b=0.2), "s": score(1.2, 0, 0.8, 0.2), "n": noul(0.9)},
        "s2": {"c": choice("b", a=0.4, b=0.6), "s": score(0.4, 0.6, 0.4, 0), "n": noul(0.3)},
    }
    after_answers = {
        "s1": {"c": choice("b", a=0.3, b=0.7), "s": score(1.6, 0, 0.4, 0.6), "n": noul(0.6)},
        "s2": {"c": choice("b", a=0.1, b=0.9), "s": score(0.2, 0.8, 0.2, 0), "n": noul(0.8)},
    }
    expected = {"s1": {"c": "a", "s": 1, "n": True}, "s2": {"c": "b", "n": False}}

    def cases(answers):
        return [
            Case(state, qid, qtypes[qid], answer, expected[state].get(qid))
            for state, by_q in answers.items()
            for qid, answer in by_q.items()
        ]

    def readings(answers):
        return {
            state: (expected[state], tuple(by_q[q][t] for q, t in qtypes.items()))
            for state, by_q in answers.items()
        }

    whole = deltas.compare_runs(cases(before_answers), cases(after_answers), 0.7, 0.5)
    read = deltas.compare_readings(
        readings(before_answers), readings(after_answers), qtypes, 0.7, 0.5
    )
    assert (read.checked, read.passed_before, read.passed_after) == (
        whole.checked,
        whole.passed_before,
        whole.passed_after,
    )
    assert [(c.state, c.question, c.kind) for c in read.changes] == [
        (c.state, c.question, c.kind) for c in whole.changes
    ]
    assert len(read.changes) >= 3


def test_the_change_of_pass_rate_reads_in_signed_points():
    assert deltas.RunDelta(6000, 1609, 1604, []).points == "-0.1"
    assert deltas.RunDelta(4, 1, 2, []).points == "+25.0"
    assert deltas.RunDelta(4, 2, 2, []).points == "0.0"
    assert deltas.RunDelta(0, 0, 0, []).points == ""


def test_option_deltas_are_after_minus_before_rounded_and_largest_first():
    before = {"probabilities": {"a": 0.1, "b": 0.3, "c": 0.6}}
    after = {"probabilities": {"a": 0.3, "b": 0.3, "c": 0.4}}
    deltas = metrics.option_deltas("choice", before, after)
    assert deltas == {"a": 0.2, "c": -0.2, "b": 0.0} and list(deltas) == ["a", "c", "b"]
    assert str(deltas["b"]) == "0.0"  # never -0.0
    assert metrics.option_deltas("noul", {"noul": 0.71}, {"noul": 0.2}) == {"true": -0.51}
    score = metrics.option_deltas("score", {"probabilities": {"0": 1}}, {"probabilities": {"1": 1}})
    assert score == {"1": 1.0, "0": -1.0}


@pytest.mark.parametrize("value", [0.5, 1.5, 2.5, 2.49, 2.51, 3.0])
def test_a_score_passes_exactly_where_its_level_is_shown(value):
    """One rule for the pass check, the level a page shows and the confusion matrix's row: a
    score of 2.50 shown as level 3 passes an expected 3 (and not 2)."""
    shown = metrics.nearest_level(value)
    answer = score(value, 0, 1)
    assert metrics.passes("score", answer, shown)
    assert not metrics.passes("score", answer, shown - 1)
