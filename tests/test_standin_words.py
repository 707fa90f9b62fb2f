"""The stand-in reads the words: the option whose words the state shares wins, an option named
only by its id has only its id's words, shuffled descriptions point the wrong way, `not_for`
counts against, a noul's statement that denies itself reads as its opposite (so the invariance
control's negation holds on it), and every answer stays one the gateway accepts."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from questions.core import answers, check, controls, invariance, spec
from questions.dev import standin
from tests.strategies import json_values, question_maps

DESK = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk owns the ticket?",
        "criteria": {
            "billing": "Payments, invoices, refunds",
            "technical": "The app crashes or shows an error",
            "sales": "Buying or upgrading a plan",
            "other": "Anything else, or unclear",
        },
    }
}
TICKETS = {
    "billing": "I was charged twice and want a refund for the invoice.",
    "technical": "The app crashes with an error when I open it.",
    "sales": "We want to upgrade our plan and buy more seats.",
}


def parsed(document: dict) -> dict[str, spec.Question]:
    return check.validate(document, lints=False, limits=spec.DEFAULT_LIMITS).document.questions


def ask(questions: dict[str, spec.Question], state) -> dict:
    body = {
        "state": state,
        "model": "m",
        "questions": {k: q.to_json() for k, q in questions.items()},
    }
    status, reply = standin.respond(body)
    assert status == 200 and reply["model"] == standin.MODEL and "not Jev" in reply["model"]
    return answers.check_response(questions, reply).answers  # the gateway's rules, all of them


@pytest.mark.parametrize("desk", list(TICKETS))
def test_the_option_whose_description_the_state_shares_wins(desk):
    answer = ask(parsed(DESK), TICKETS[desk])["desk"]
    assert answer["choice"] == desk
    assert 0.5 < answer["probabilities"][desk] < 1  # clear, yet not all the mass
    assert answer["confidence"] == standin.confidence(list(answer["probabilities"].values()))


def test_bare_ids_get_only_their_ids_words_and_shuffled_descriptions_point_the_wrong_way():
    questions = parsed(DESK)
    bare = parsed({"desk": {**DESK["desk"], "criteria": dict.fromkeys(DESK["desk"]["criteria"])}})
    shuffled = controls.variant_questions(questions, controls.SHUFFLE, seed=1, variant=1)
    for desk, ticket in TICKETS.items():
        assert set(ask(bare, ticket)["desk"]["probabilities"].values()) == {0.25}  # no word
        moved_to = next(
            o for o, t in shuffled["desk"].criteria.items() if t == DESK["desk"]["criteria"][desk]
        )
        assert ask(shuffled, ticket)["desk"]["choice"] == moved_to != desk
    # an id that is a word the state says is read like a description
    assert ask(bare, "Need a refund for billing")["desk"]["choice"] == "billing"


def test_a_structured_entry_reads_what_and_examples_for_and_not_for_against():
    document = {
        "kind": {
            "type": "choice",
            "criteria": {
                "network": {"what": "downloads or uploads", "not_for": "package installs"},
                "build": {"what": "builds the project", "examples": ["npm install", "make"]},
            },
        }
    }
    assert ask(parsed(document), {"command": "npm install left-pad"})["kind"]["choice"] == "build"
    assert ask(parsed(document), "uploads the package installs")["kind"]["choice"] == "build"
    assert ask(parsed(document), "downloads a file")["kind"]["choice"] == "network"


def test_a_score_reads_its_levels_and_a_noul_its_cases_and_statement():
    document = {
        "anger": {"type": "score", "criteria": ["calm and polite", "annoyed", "furious, shouting"]},
        "spam": {
            "type": "noul",
            "instructions": "Is this an advert?",
            "criteria": {
                "true": "sells something, a discount",
                "false": "a question about an order",
            },
        },
        "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    }
    questions = parsed(document)
    furious = ask(questions, "I am furious! Shouting at my screen. Big discount inside")
    assert furious["anger"]["score"] > 1.5 and furious["spam"]["noul"] > 0.5
    calm = ask(questions, "A polite question about my order, all calm")
    assert calm["anger"]["score"] < 0.5 and calm["spam"]["noul"] < 0.5
    assert (
        ask(questions, "urgent")["urgent"]["noul"] > 0.5 > ask(questions, "later")["urgent"]["noul"]
    )
    assert ask(questions, "")["spam"]["noul"] == 0.27  # no case spoken of; the statement absent


def test_a_statement_that_denies_itself_reads_as_its_opposite():
    document = {
        "urgent": {"type": "noul", "instructions": "Is it urgent?"},
        "denied": {"type": "noul", "instructions": "It is not the case that: Is it urgent?"},
        "twice": {"type": "noul", "instructions": "It's not true that it is false that: urgent"},
    }
    said = ask(parsed(document), "urgent, today")
    assert said["urgent"]["noul"] > 0.5 > said["denied"]["noul"]
    assert round(said["urgent"]["noul"] + said["denied"]["noul"], 2) == 1.0
    assert said["twice"]["noul"] == said["urgent"]["noul"]  # two denials affirm
    # a "not" inside the sentence is a word like the others: word overlap cannot read it
    assert standin.statement("Is it not urgent?") == ("Is it not urgent?", False)
    assert standin.statement("It is true that: urgent") == ("It is true that: urgent", False)


#: a few words, so that states, statements and cases share some
VOCABULARY = ["refund", "urgent", "today", "invoice", "crash", "angry", "deadline", "card", "the"]
SAID = st.lists(st.sampled_from(VOCABULARY), max_size=6).map(" ".join)
NOULS = st.fixed_dictionaries(
    {"type": st.just("noul"), "instructions": SAID.filter(str.strip)},
    optional={
        "criteria": st.fixed_dictionaries(
            {}, optional={"true": SAID.filter(str.strip), "false": SAID.filter(str.strip)}
        )
    },
)


@settings(max_examples=100)
@given(NOULS, SAID, st.sampled_from([b"", standin.CHAT_SALT]))
def test_a_noul_negated_as_the_invariance_control_asks_it_answers_one_minus_p(noul, state, salt):
    """The control's `negated` variant (the statement denied, the cases swapped): P(true) +
    P(negated true) is 1 within the two decimals each is rounded to."""
    result = check.validate({"q": noul}, lints=False, limits=spec.DEFAULT_LIMITS)
    assume(result.valid)
    question = result.document.questions["q"]
    p = standin.answer(question, state, salt)["noul"]
    negated = standin.answer(invariance.negated(question), state, salt)["noul"]
    assert abs(p + negated - 1) <= 0.01 + 1e-9


def test_the_chat_wire_is_surer_than_the_native_one():
    native = ask(parsed(DESK), TICKETS["billing"])["desk"]["probabilities"]["billing"]
    _, chat = standin.respond({"state": TICKETS["billing"], "questions": DESK}, standin.CHAT_SALT)
    assert chat["answers"]["desk"]["probabilities"]["billing"] > native


def test_the_model_list_and_the_banner_say_it_answers_by_word_overlap():
    assert standin.HOW_IT_ANSWERS in standin.MODELS["models"][0]["description"]
    assert "word overlap" in standin.HOW_IT_ANSWERS


@settings(max_examples=60, deadline=None)
@given(question_maps, json_values, st.sampled_from([b"", standin.CHAT_SALT]))
def test_every_answer_is_valid_under_the_gateways_rules(qmap, state, salt):
    status, body = standin.respond({"state": state, "model": "m", "questions": qmap}, salt)
    assert status == 200
    checked = answers.check_response(parsed(qmap), body)
    for answer in checked.answers.values():
        if answer["type"] != "noul":
            assert round(sum(answer["probabilities"].values()), 2) == 1.0
            assert all(round(p, 2) == p for p in answer["probabilities"].values())
