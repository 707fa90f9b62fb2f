"""Answer checking: the documented answers, each rule of the gateway broken once, and the
two-decimal rounding tolerance at its edges."""

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from questions.core import answers, spec

EXAMPLES = Path(__file__).resolve().parent / "examples"
PROVIDER_REQUEST = spec.parse(
    json.loads((EXAMPLES / "typesafe-request.json").read_text()), limits=spec.DEFAULT_LIMITS
)
RUNTIME_REQUEST = spec.parse(
    json.loads((EXAMPLES / "runtime-request.json").read_text()), limits=spec.DEFAULT_LIMITS
)
DOCUMENTED = [
    json.loads(line) for line in (EXAMPLES / "typesafe-responses.jsonl").read_text().splitlines()
]


def asked(*ids: str) -> dict[str, spec.Question]:
    return {qid: PROVIDER_REQUEST.questions[qid] for qid in ids}


def response(**answers_by_id) -> dict:
    return {"model": "jev-1.13.0", "answers": answers_by_id, "usage": {"input_tokens": 100}}


def choice_answer(**overrides) -> dict:
    base = {
        "type": "choice",
        "choice": "billing",
        "probabilities": {"billing": 0.88, "technical": 0.12, "sales": 0.0},
        "confidence": 0.81,
    }
    return {**base, **overrides}


def score_answer(**overrides) -> dict:
    base = {
        "type": "score",
        "score": 1.05,
        "legend": {"0": "Calm", "1": "Frustrated", "2": "Very angry"},
        "probabilities": {"0": 0.0, "1": 0.95, "2": 0.05},
        "confidence": 0.92,
    }
    return {**base, **overrides}


def rejected(questions, body) -> answers.AnswerError:
    with pytest.raises(answers.AnswerError) as caught:
        answers.check_response(questions, body)
    assert caught.value.status == 502
    return caught.value


# --- documented answers ------------------------------------------------------------------------


@pytest.mark.parametrize("body", DOCUMENTED, ids=lambda b: next(iter(b["answers"])))
def test_documented_answers_pass(body):
    qid = next(iter(body["answers"]))
    checked = answers.check_response(asked(qid), body)
    assert checked.model == "jev-1.13.0"
    assert checked.usage == body["usage"]
    for key, value in body["answers"][qid].items():
        assert checked.answers[qid][key] == value  # never rewritten


def test_documented_choice_gets_near_uniform():
    checked = answers.check_response(asked("department"), DOCUMENTED[1])
    assert checked.answers["department"]["nearUniform"] is False


def test_the_runtime_examples_score_of_2_is_not_its_weighted_sum():
    # shared/examples: "The response's "score": 2 is as documented." Its probabilities weigh
    # 0.05·0 + 0.2·1 + 0.6·2 + 0.15·3 = 1.85, which no two-decimal rounding turns into 2.
    body = json.loads((EXAMPLES / "runtime-response.json").read_text())
    error = rejected(RUNTIME_REQUEST, body)
    assert error.question == "energy"
    assert "score is 2" in error.detail and "1.85" in error.detail


def test_the_runtime_example_passes_once_its_score_is_the_weighted_sum():
    body = json.loads((EXAMPLES / "runtime-response.json").read_text())
    body["answers"]["energy"]["score"] = 1.85
    checked = answers.check_response(RUNTIME_REQUEST, body)
    assert list(checked.answers) == ["intent", "start", "energy"]
    assert checked.extra == {"timing": {"total_ms": 356, "provider_ms": 349}}


# --- each rule broken once ---------------------------------------------------------------------


BROKEN = {
    "missing answer": ("department", {}),
    "answer not an object": ("department", {"department": "billing"}),
    "wrong type": ("department", {"department": score_answer()}),
    "no type": (
        "department",
        {"department": {k: v for k, v in choice_answer().items() if k != "type"}},
    ),
    "choice missing confidence": (
        "department",
        {"department": {k: v for k, v in choice_answer().items() if k != "confidence"}},
    ),
    "choice missing probabilities": (
        "department",
        {"department": {k: v for k, v in choice_answer().items() if k != "probabilities"}},
    ),
    "undeclared choice": ("department", {"department": choice_answer(choice="legal")}),
    "choice not a string": ("department", {"department": choice_answer(choice=1)}),
    "probabilities lack an option": (
        "department",
        {"department": choice_answer(probabilities={"billing": 0.88, "technical": 0.12})},
    ),
    "probabilities add an option": (
        "department",
        {
            "department": choice_answer(
                probabilities={"billing": 0.88, "technical": 0.12, "sales": 0.0, "legal": 0.0}
            )
        },
    ),
    "probability above 1": (
        "department",
        {
            "department": choice_answer(
                probabilities={"billing": 1.2, "technical": -0.2, "sales": 0.0}
            )
        },
    ),
    "probability a string": (
        "department",
        {
            "department": choice_answer(
                probabilities={"billing": "0.88", "technical": 0.12, "sales": 0.0}
            )
        },
    ),
    "probability a boolean": (
        "department",
        {
            "department": choice_answer(
                probabilities={"billing": True, "technical": 0.0, "sales": 0.0}
            )
        },
    ),
    "confidence above 1": ("department", {"department": choice_answer(confidence=1.01)}),
    "confidence negative": ("department", {"department": choice_answer(confidence=-0.01)}),
    "confidence null": ("department", {"department": choice_answer(confidence=None)}),
    "sum far from 1": (
        "department",
        {
            "department": choice_answer(
                probabilities={"billing": 0.5, "technical": 0.2, "sales": 0.0}
            )
        },
    ),
    "noul above 1": ("is_urgent", {"is_urgent": {"type": "noul", "noul": 1.5}}),
    "noul missing": ("is_urgent", {"is_urgent": {"type": "noul"}}),
    "noul not a number": ("is_urgent", {"is_urgent": {"type": "noul", "noul": "high"}}),
    "noul infinite": ("is_urgent", {"is_urgent": {"type": "noul", "noul": math.inf}}),
    "score missing legend": (
        "frustration",
        {"frustration": {k: v for k, v in score_answer().items() if k != "legend"}},
    ),
    "score above n-1": ("frustration", {"frustration": score_answer(score=2.01)}),
    "score negative": ("frustration", {"frustration": score_answer(score=-0.01)}),
    "score not finite": ("frustration", {"frustration": score_answer(score=math.nan)}),
    "score keys not indices": (
        "frustration",
        {
            "frustration": score_answer(
                probabilities={"Calm": 0.0, "Frustrated": 0.95, "Very angry": 0.05}
            )
        },
    ),
    "score key beyond the levels": (
        "frustration",
        {"frustration": score_answer(probabilities={"0": 0.0, "1": 0.95, "2": 0.0, "3": 0.05})},
    ),
    "legend keys wrong": (
        "frustration",
        {"frustration": score_answer(legend={"1": "Calm", "2": "Frustrated", "3": "Very angry"})},
    ),
    "score not the weighted sum": ("frustration", {"frustration": score_answer(score=1.5)}),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_each_rule_broken_once_is_a_502_naming_the_question(case):
    qid, answers_by_id = BROKEN[case]
    error = rejected(asked(qid), response(**answers_by_id))
    assert error.question == qid
    assert f"`{qid}`" in error.detail


@pytest.mark.parametrize(
    "body",
    [None, [], "ok", {"model": "m"}, {"answers": []}, {"error": {"code": 500, "message": "boom"}}],
)
def test_a_response_of_the_wrong_shape_is_a_502(body):
    error = rejected(asked("is_urgent"), body)
    assert error.question is None


def test_every_broken_rule_is_listed():
    body = response(
        department=choice_answer(choice="legal", confidence=2),
        is_urgent={"type": "noul", "noul": -1},
    )
    error = rejected(asked("department", "is_urgent"), body)
    assert [q for q, _ in error.problems] == ["department", "department", "is_urgent"]


# --- what is dropped and what is kept ----------------------------------------------------------


def test_answers_for_unasked_ids_are_dropped_and_added_fields_kept():
    body = response(
        is_urgent={"type": "noul", "noul": 0.95, "rationale_id": "r1"},
        never_asked={"type": "noul", "noul": 0.5},
    )
    body["id"] = "gen-123"
    body["provider"] = "TypeSafe"
    checked = answers.check_response(asked("is_urgent"), body)
    assert list(checked.answers) == ["is_urgent"]
    assert checked.answers["is_urgent"]["rationale_id"] == "r1"
    assert checked.dropped == ("never_asked",)
    assert checked.extra == {"id": "gen-123", "provider": "TypeSafe"}
    assert checked.to_json()["provider"] == "TypeSafe"


def test_noul_may_carry_extra_fields_but_needs_no_confidence():
    body = response(is_urgent={"type": "noul", "noul": 0})
    assert answers.check_response(asked("is_urgent"), body).answers["is_urgent"]["noul"] == 0


def test_the_checker_does_not_change_the_body_it_was_given():
    body = response(department=choice_answer())
    before = copy.deepcopy(body)
    answers.check_response(asked("department"), body)
    assert body == before


# --- the rounding tolerance --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probabilities", "accepted"),
    [
        ({"billing": 0.34, "technical": 0.33, "sales": 0.33}, True),  # sum 1.00
        ({"billing": 0.34, "technical": 0.34, "sales": 0.33}, True),  # 1.01: rounding
        ({"billing": 0.33, "technical": 0.33, "sales": 0.33}, True),  # 0.99: rounding
        ({"billing": 0.345, "technical": 0.34, "sales": 0.33}, True),  # 1.015: the edge
        ({"billing": 0.35, "technical": 0.34, "sales": 0.33}, False),  # 1.02: beyond
        ({"billing": 0.32, "technical": 0.33, "sales": 0.33}, False),  # 0.98: beyond
        ({"billing": 1, "technical": 0, "sales": 0}, True),  # integers
        ({"billing": 0.99, "technical": 0, "sales": 0}, True),  # zeros may hide 0.004 each
        ({"billing": 0.985, "technical": 0, "sales": 0}, True),  # the edge with zeros
        ({"billing": 0.98, "technical": 0, "sales": 0}, False),
        ({"billing": 1.0, "technical": 0.01, "sales": 0}, True),  # 1.01 with a zero
        ({"billing": 1.0, "technical": 0.01, "sales": 0.01}, False),  # zeros can't round down
    ],
)
def test_choice_sums_within_rounding(probabilities, accepted):
    body = response(department=choice_answer(probabilities=probabilities))
    if accepted:
        answers.check_response(asked("department"), body)
    else:
        error = rejected(asked("department"), body)
        assert "cannot explain" in error.detail


@pytest.mark.parametrize(
    ("score", "probabilities", "accepted"),
    [
        (1.05, {"0": 0.0, "1": 0.95, "2": 0.05}, True),  # documented
        (1.055, {"0": 0.0, "1": 0.95, "2": 0.05}, True),
        (1.06, {"0": 0.0, "1": 0.95, "2": 0.05}, True),  # the edge: S_hi 1.055 + h
        (1.065, {"0": 0.0, "1": 0.95, "2": 0.05}, False),
        (1.035, {"0": 0.0, "1": 0.95, "2": 0.05}, True),  # the lower edge
        (1.03, {"0": 0.0, "1": 0.95, "2": 0.05}, False),
        (1, {"0": 0, "1": 1, "2": 0}, True),  # integers throughout
        (0.5, {"0": 0.5, "1": 0.5, "2": 0}, True),
        (0.51, {"0": 0.5, "1": 0.5, "2": 0}, True),  # off by a hundredth
        (0.515, {"0": 0.5, "1": 0.5, "2": 0}, True),  # the edge: S_hi 0.51 + h
        (0.52, {"0": 0.5, "1": 0.5, "2": 0}, False),
        (0.49, {"0": 0.5, "1": 0.5, "2": 0}, True),  # S_lo 0.495 − h: a 0 cannot go lower
        (0.485, {"0": 0.5, "1": 0.5, "2": 0}, False),
    ],
)
def test_weighted_scores_within_rounding(score, probabilities, accepted):
    body = response(frustration=score_answer(score=score, probabilities=probabilities))
    if accepted:
        answers.check_response(asked("frustration"), body)
    else:
        error = rejected(asked("frustration"), body)
        assert "two-decimal rounding allows" in error.detail


def test_a_probability_may_arrive_as_the_integer_0():
    body = response(
        department=choice_answer(probabilities={"billing": 1, "technical": 0, "sales": 0})
    )
    checked = answers.check_response(asked("department"), body)
    assert checked.answers["department"]["probabilities"]["sales"] == 0


def ten_level_question() -> dict[str, spec.Question]:
    doc = spec.parse(
        {"s": {"type": "score", "criteria": [f"level {i}" for i in range(10)]}},
        limits=spec.DEFAULT_LIMITS,
    )
    return doc.questions


def ten_level_answer(probabilities: list[float], score: float) -> dict:
    return response(
        s={
            "type": "score",
            "score": score,
            "probabilities": {str(i): p for i, p in enumerate(probabilities)},
            "legend": {str(i): f"level {i}" for i in range(10)},
            "confidence": 0.5,
        }
    )


@settings(max_examples=500)
@given(
    st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=10).filter(
        lambda w: sum(w) > 1e-6
    )
)
def test_any_real_distribution_rounded_to_two_decimals_is_accepted(weights):
    total = sum(weights)
    p = [w / total for w in weights]
    levels = len(p)
    doc = spec.parse(
        {"s": {"type": "score", "criteria": [f"level {i}" for i in range(levels)]}},
        limits=spec.DEFAULT_LIMITS,
    )
    body = response(
        s={
            "type": "score",
            "score": round(sum(i * pi for i, pi in enumerate(p)), 2),
            "probabilities": {str(i): round(pi, 2) for i, pi in enumerate(p)},
            "legend": {str(i): f"level {i}" for i in range(levels)},
            "confidence": round(max(p), 2),
        }
    )
    answers.check_response(doc.questions, body)
    names = {f"o{i}": f"option {i}" for i in range(levels)}
    cdoc = spec.parse({"c": {"type": "choice", "criteria": names}}, limits=spec.DEFAULT_LIMITS)
    cbody = response(
        c={
            "type": "choice",
            "choice": "o0",
            "probabilities": {f"o{i}": round(pi, 2) for i, pi in enumerate(p)},
            "confidence": 0.5,
        }
    )
    answers.check_response(cdoc.questions, cbody)


def test_a_near_uniform_255_option_answer_rounds_to_zeros_and_is_still_explained():
    names = {f"o{i}": f"option {i}" for i in range(255)}
    doc = spec.parse({"c": {"type": "choice", "criteria": names}}, limits=spec.DEFAULT_LIMITS)
    body = response(
        c={
            "type": "choice",
            "choice": "o7",
            "probabilities": {name: 0 for name in names} | {"o7": 0.01},
            "confidence": 0.01,
        }
    )
    checked = answers.check_response(doc.questions, body)
    assert checked.answers["c"]["nearUniform"] is True


def test_ten_level_tolerance_is_derived_not_fixed():
    # ten values of 0.1 may each be 0.095…0.105: the mass can lean to the top five levels,
    # S_hi = 4.5 − 0.005·45 + 0.01·(5+6+7+8+9) = 4.625, so up to 4.63 is explained
    uniform = [0.1] * 10
    answers.check_response(ten_level_question(), ten_level_answer(uniform, 4.5))
    answers.check_response(ten_level_question(), ten_level_answer(uniform, 4.63))
    answers.check_response(ten_level_question(), ten_level_answer(uniform, 4.37))
    with pytest.raises(answers.AnswerError):
        answers.check_response(ten_level_question(), ten_level_answer(uniform, 4.64))
    with pytest.raises(answers.AnswerError):
        answers.check_response(ten_level_question(), ten_level_answer(uniform, 4.36))


def test_weighted_score_range_matches_the_derivation():
    lo, hi = answers.weighted_score_range([0.0, 0.95, 0.05])
    assert (round(lo, 6), round(hi, 6)) == (1.04, 1.055)


# --- near-uniform and cost ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probabilities", "expected"),
    [
        ({"a": 0.5, "b": 0.5}, True),
        ({"a": 0.55, "b": 0.45}, True),  # exactly 0.05 away
        ({"a": 0.56, "b": 0.44}, False),
        ({"a": 0.34, "b": 0.33, "c": 0.33}, True),
        ({"a": 0.88, "b": 0.12, "c": 0.0}, False),
    ],
)
def test_near_uniform(probabilities, expected):
    assert answers.near_uniform(probabilities) is expected


def test_near_uniform_is_added_to_every_checked_choice():
    body = response(
        department=choice_answer(probabilities={"billing": 0.34, "technical": 0.33, "sales": 0.33})
    )
    checked = answers.check_response(asked("department"), body)
    assert checked.answers["department"]["nearUniform"] is True


@pytest.mark.parametrize(
    ("usage", "cost"),
    [
        ({"input_tokens": 1_000_000, "output_tokens": 5}, 0.042),
        ({"input_tokens": 812, "output_tokens": 0}, 812 * 0.042 / 1e6),
        ({"input_tokens": 812, "cost": 0.5}, 0.5),  # a provider-reported cost wins
        ({"input_tokens": None}, None),  # unknown stays unknown
        ({}, None),
        (None, None),
    ],
)
def test_cost_from_usage(usage, cost):
    result = answers.cost_of(usage, answers.DEFAULT_PRICE_PER_MILLION_INPUT_TOKENS)
    assert result == pytest.approx(cost) if cost is not None else result is None


def test_cost_uses_the_price_given():
    body = response(is_urgent={"type": "noul", "noul": 0.5})
    checked = answers.check_response(asked("is_urgent"), body, price_per_million=1.0)
    assert checked.cost == pytest.approx(100 / 1e6)


# --- which rules refuse depends on the wire ------------------------------------------------------


def runtime_example() -> dict:
    return json.loads((EXAMPLES / "runtime-response.json").read_text())


def test_the_seed_example_passes_the_runtime_rules_with_its_weighted_score_flagged():
    checked = answers.check_response(RUNTIME_REQUEST, runtime_example(), rules=answers.RUNTIME)
    energy = checked.answers["energy"]
    assert energy["score"] == 2  # never fixed
    assert [f["code"] for f in energy["flags"]] == ["weighted_score"]
    assert "1.85" in energy["flags"][0]["detail"]
    assert "flags" not in checked.answers["intent"] and "flags" not in checked.answers["start"]
    assert checked.extra["timing"] == {"total_ms": 356, "provider_ms": 349}


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (choice_answer(choice="legal"), "undeclared_choice"),
        (
            choice_answer(probabilities={"billing": 0.88, "technical": 0.12}),
            "missing_keys",
        ),
        (
            choice_answer(
                probabilities={"billing": 0.8, "technical": 0.1, "sales": 0.0, "legal": 0.1}
            ),
            "undeclared_keys",
        ),
        (choice_answer(probabilities={"billing": 0.5, "technical": 0.1, "sales": 0.1}), "sum"),
    ],
)
def test_gateway_rules_are_flags_through_the_runtime_and_502s_elsewhere(answer, code):
    body = response(department=answer)
    checked = answers.check_response(asked("department"), body, rules=answers.RUNTIME)
    assert code in [f["code"] for f in checked.answers["department"]["flags"]]
    rejected(asked("department"), body)


@pytest.mark.parametrize(
    "answer",
    [
        choice_answer(confidence=1.2),
        choice_answer(probabilities={"billing": 1.5, "technical": 0.12, "sales": 0.0}),
        choice_answer(choice=3),
        {"type": "noul"},
        {"type": "choice", "noul": 0.5},
    ],
)
def test_the_runtime_rules_still_refuse_types_fields_and_ranges(answer):
    with pytest.raises(answers.AnswerError):
        answers.check_response(
            asked("department"), response(department=answer), rules=answers.RUNTIME
        )


def test_the_runtime_rules_refuse_a_missing_answer_and_a_score_out_of_range():
    body = response(frustration=score_answer(score=2.5))
    with pytest.raises(answers.AnswerError, match=r"must lie in 0\.\.2"):
        answers.check_response(asked("frustration"), body, rules=answers.RUNTIME)
    with pytest.raises(answers.AnswerError, match="has no answer"):
        answers.check_response(
            asked("frustration", "is_urgent"),
            response(frustration=score_answer()),
            rules=answers.RUNTIME,
        )


@pytest.mark.parametrize("rules", [answers.RUNTIME, answers.GATEWAY])
def test_a_choice_that_is_not_the_most_probable_is_flagged_on_every_wire(rules):
    answer = choice_answer(choice="technical")
    checked = answers.check_response(asked("department"), response(department=answer), rules=rules)
    flags = checked.answers["department"]["flags"]
    assert [f["code"] for f in flags] == ["not_most_probable"]
    assert "`billing`" in flags[0]["detail"]
    assert checked.answers["department"]["choice"] == "technical"


def test_a_tie_at_the_top_is_not_flagged():
    answer = choice_answer(probabilities={"billing": 0.5, "technical": 0.5, "sales": 0.0})
    checked = answers.check_response(
        asked("department"), response(department=answer.copy() | {"choice": "technical"})
    )
    assert "flags" not in checked.answers["department"]


HUGE = 10**400  # JSON allows it; a double cannot hold it (math.isfinite overflows)


@pytest.mark.parametrize(
    ("ids", "answer"),
    [
        (("is_urgent",), {"is_urgent": {"type": "noul", "noul": HUGE}}),
        (("frustration",), {"frustration": score_answer(score=HUGE)}),
        (("department",), {"department": choice_answer(confidence=HUGE)}),
    ],
)
def test_an_integer_too_large_for_a_double_is_refused_by_name_never_raised(ids, answer):
    assert answers.is_number(HUGE) is False
    with pytest.raises(answers.AnswerError, match="too large for a double"):
        answers.check_response(asked(*ids), response(**answer))


def test_a_huge_token_count_has_no_cost_rather_than_an_overflow():
    assert answers.cost_of({"input_tokens": HUGE}, 0.042) is None
