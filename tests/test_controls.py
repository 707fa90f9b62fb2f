"""The control variants and what their answers say (pure: no database)."""

from __future__ import annotations

import pytest

from questions.core import check, controls, metrics, spec
from tests.providers import DOC

DOCUMENT = {
    **DOC,
    "level": {"type": "score", "instructions": "How bad?", "criteria": ["low", "mid", "high"]},
    "flag": {"type": "noul", "criteria": {"true": "yes it is", "false": "no it is not"}},
}


def parsed() -> dict[str, spec.Question]:
    return check.validate(DOCUMENT, limits=spec.Limits(), lints=False).document.questions


@pytest.mark.parametrize("kind", controls.KINDS)
def test_variant_0_is_the_questions_as_written(kind):
    assert controls.variant_questions(parsed(), kind, 7, 0) == parsed()


def test_a_shuffle_moves_every_description_and_leaves_the_rest_alone():
    questions = parsed()
    for variant in range(1, 6):
        shuffled = controls.variant_questions(questions, controls.SHUFFLE, 7, variant)
        desk, was = shuffled["desk"].criteria, questions["desk"].criteria
        assert list(desk) == list(was)  # the options in their order
        assert sorted(desk.values()) == sorted(was.values())  # the same descriptions
        assert all(desk[o] != was[o] for o in was)  # each one moved
        assert shuffled["level"] == questions["level"]  # score levels untouched
        assert shuffled["flag"] == questions["flag"]  # noul criteria untouched
        assert shuffled["urgent"] == questions["urgent"]


def test_an_order_keeps_each_description_with_its_option_and_never_reorders_levels():
    questions = parsed()
    orders = set()
    for variant in range(1, 6):
        q = controls.variant_questions(questions, controls.ORDERS, 3, variant)
        assert q["desk"].criteria == questions["desk"].criteria  # the same pairs
        assert list(q["desk"].criteria) != list(questions["desk"].criteria)  # another order
        assert q["level"].criteria == ["low", "mid", "high"]
        orders.add(tuple(q["desk"].criteria))
    assert len(orders) > 1


def test_the_variants_are_seeded_and_deterministic():
    one = controls.variant_questions(parsed(), controls.SHUFFLE, 11, 2)
    assert (
        one["desk"].criteria
        == controls.variant_questions(parsed(), "shuffle", 11, 2)["desk"].criteria
    )
    others = {
        tuple(controls.variant_questions(parsed(), "orders", seed, 1)["desk"].criteria)
        for seed in range(12)
    }
    assert len(others) > 1  # the seed decides


def test_a_repeat_asks_the_same_questions_every_time():
    assert controls.variant_questions(parsed(), controls.REPEAT, 5, 3) == parsed()
    assert controls.variants(controls.REPEAT, 3) == 3
    assert controls.variants(controls.SHUFFLE, 3) == 4


def test_an_unknown_control_is_refused():
    with pytest.raises(ValueError, match="Unknown control"):
        controls.variant_questions(parsed(), "jiggle", 1, 1)


def choice(chosen: str, p: float = 0.8) -> dict:
    rest = (1 - p) / 2
    probabilities = {o: (p if o == chosen else rest) for o in ("billing", "tech", "other")}
    return {"type": "choice", "choice": chosen, "probabilities": probabilities, "confidence": p}


def calls(real: list[str], shuffled: list[list[str]]) -> list[controls.Answered]:
    out = []
    for i, chosen in enumerate(real):
        expected = {"desk": "billing"}
        out.append(controls.Answered(f"s{i}", 0, {"desk": choice(chosen)}, expected))
        for v, row in enumerate(shuffled, start=1):
            out.append(controls.Answered(f"s{i}", v, {"desk": choice(row[i])}, expected))
    return out


def test_words_that_carry_the_decision_score_clearly_above_the_shuffled_floor():
    report = controls.control_report(
        "shuffle",
        {"desk": "choice", "urgent": "noul"},
        calls(["billing"] * 4, [["tech", "other", "billing", "tech"], ["other"] * 4]),
    )
    desk = report["desk"]
    assert (desk.real_pass_rate, desk.floor) == (1.0, 1 / 8)
    assert desk.no_signal is False
    assert report["urgent"].varied is False and report["urgent"].no_signal is None


def test_a_real_pass_rate_at_the_floor_is_flagged_no_signal():
    report = controls.control_report(
        "shuffle",
        {"desk": "choice"},
        calls(["billing", "tech", "other", "tech"], [["billing", "tech", "other", "billing"]]),
    )
    assert report["desk"].real_pass_rate == 0.25 and report["desk"].floor == 0.5
    assert report["desk"].no_signal is True
    assert controls.NO_SIGNAL == "the words carry no signal here"


def test_order_sensitivity_counts_flips_and_the_largest_distance():
    answered = calls(["billing", "billing"], [["billing", "tech"], ["billing", "billing"]])
    desk = controls.control_report("orders", {"desk": "choice"}, answered)["desk"]
    assert (desk.flips, desk.compared) == (1, 4)
    assert desk.flip_rate == 0.25
    assert desk.largest_distance == pytest.approx(0.7)
    assert desk.no_signal is None  # only a shuffle has a floor to be at


def test_repeatability_spread_and_flip_rate():
    answered = [
        controls.Answered("a", 0, {"urgent": {"type": "noul", "noul": 0.40}}, {}),
        controls.Answered("a", 1, {"urgent": {"type": "noul", "noul": 0.55}}, {}),
        controls.Answered("a", 2, {"urgent": {"type": "noul", "noul": 0.45}}, {}),
        controls.Answered("b", 0, {"urgent": {"type": "noul", "noul": 0.9}}, {}),
        controls.Answered("b", 1, {"urgent": {"type": "noul", "noul": 0.9}}, {}),
    ]
    urgent = controls.control_report("repeat", {"urgent": "noul"}, answered)["urgent"]
    assert urgent.flip_rate == pytest.approx(1 / 3)
    assert urgent.largest_spread == pytest.approx(0.15)
    assert urgent.mean_spread == pytest.approx(0.075)


def case(state: str, chosen: str, expected: str = "billing") -> metrics.Case:
    return metrics.Case(state, "desk", "choice", choice(chosen), expected)


def test_drift_reports_flips_and_pass_rate_and_calibration_deltas():
    before = [case("a", "billing"), case("b", "billing"), case("c", "tech")]
    after = [case("a", "billing"), case("b", "tech"), case("c", "tech")]
    found = controls.drift(before, after)
    assert found.questions["desk"].flips == ["b"]
    assert (found.flips, found.compared) == (1, 3)
    assert found.flip_rate == pytest.approx(1 / 3)
    assert controls.delta(found.before.pass_rate, found.after.pass_rate) == pytest.approx(-1 / 3)
    brier = found.calibration()["choice_brier"]
    assert brier["delta"] == pytest.approx(brier["after"] - brier["before"]) and brier["delta"] > 0


def test_a_shuffle_verdict_on_few_answers_says_so():
    finding = controls.QuestionControl("q", "choice", controls.SHUFFLE, varied=True)
    finding.real_passed, finding.real_checked = 1, 2
    finding.floor_passed, finding.floor_checked = 3, 6
    assert finding.no_signal is True and finding.few_answers is True
    assert finding.as_json()["few_answers"] is True
    finding.real_passed, finding.real_checked = 9, 10
    assert finding.no_signal is False and finding.few_answers is False
