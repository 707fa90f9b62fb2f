"""The stand-in drafts rewordings from the words, the same every time: "closer" gives an option
the words its failing states share (and nobody else's states say), "apart" takes from the
option they were pulled to the phrase that pulled them, "by heart" adds the words only one of
them says; its answer is the drafting wire's and checks against its schema. And the demo: on a fresh
database `make run`'s suggestion proves one candidate better and refutes another."""

from __future__ import annotations

import json

import pytest

from questions.core import check, proof, rewording, spec
from questions.dev import standin
from questions.engine.backends import drafting

CHOICE = {
    "type": "choice",
    "instructions": "Which desk?",
    "criteria": {
        "billing": "A charge, an invoice or a refund of money",
        "shipping": "A parcel that is late or lost",
        "other": {"what": "Anything else", "not_for": "money"},
    },
}


def parsed(question: dict) -> spec.Question:
    return check.validate(
        {"q": question}, limits=spec.DEFAULT_LIMITS, lints=False
    ).document.questions["q"]


def failing(name, says, expected, answered, evidence=()):
    return rewording.Failing(
        name,
        {"message": says},
        expected,
        answered,
        [rewording.Finding(p, w, d) for p, w, d in evidence],
    )


PULLED = [("criteria.billing", CHOICE["criteria"]["billing"], -0.4)]
FAILING = [
    failing("a", "The courier left the box at the door. Refund.", "shipping", "billing", PULLED),
    failing("b", "No box arrived, the courier says delivered. Refund.", "shipping", "billing"),
    failing("c", "The box arrived crushed, refund it.", "shipping", "billing"),
]
PASSING = [{"state": {"message": "Please refund the fee I paid twice."}, "expected": "billing"}]


def drafted(question: dict, states=FAILING, passing=PASSING, count=3) -> list[rewording.Drafted]:
    q = parsed(question)
    body = drafting.request_body(q, states, passing, count, "m")
    status, reply = standin.respond_chat(body)
    assert status == 200, reply
    assert reply["model"] == standin.CHAT_MODEL
    content = json.loads(reply["choices"][0]["message"]["content"])
    return rewording.read_reply(q, count, content)


def test_closer_adds_the_words_the_failing_states_share_and_no_one_else_says():
    closer, _, _ = drafted(CHOICE)
    assert closer.problem == ""
    assert closer.texts.criteria["shipping"] == (
        "A parcel that is late or lost \u2014 also when it mentions box, courier or arrived"
    )
    assert closer.texts.criteria["billing"] == CHOICE["criteria"]["billing"]  # nothing shared
    assert closer.why.startswith("Closer: `shipping` gains box, courier, arrived")


def test_apart_drops_the_phrase_that_pulled_them_and_never_empties_a_description():
    _, apart, _ = drafted(CHOICE)
    assert apart.texts.criteria["billing"] == "A charge, an invoice"  # "a refund of money" went
    assert apart.texts.criteria["shipping"] == CHOICE["criteria"]["shipping"]
    one_phrase = {**CHOICE, "criteria": {**CHOICE["criteria"], "billing": "Refunds"}}
    _, kept, _ = drafted(one_phrase)
    assert kept.texts.criteria["billing"] == "Refunds"


def test_by_heart_adds_the_words_only_one_failing_state_says_within_the_bound():
    _, _, heart = drafted(CHOICE)
    added = heart.texts.criteria["shipping"]
    for word in ("door", "left", "crushed", "says"):
        assert word in added
    for shared in ("courier", "box", "arrived"):  # two or more say these
        assert shared not in added
    many = [
        failing(f"s{i}", f"word{i}a word{i}b word{i}c", "shipping", "billing") for i in range(200)
    ]
    _, _, heart = drafted(CHOICE, states=many)
    assert len(heart.texts.criteria["shipping"]) <= rewording.MAX_TEXT


def test_the_same_request_drafts_the_same_candidates_and_each_move_once():
    assert drafted(CHOICE, count=5) == drafted(CHOICE, count=5)
    whys = [d.why.split(":")[0] for d in drafted(CHOICE, count=5)]
    assert whys == ["Closer", "Apart", "By heart", "Closer", "Closer"]  # both = closer + apart
    assert "Apart:" in drafted(CHOICE, count=5)[3].why


def test_a_documented_entry_keeps_its_not_for_and_examples():
    shipping = {"what": "A parcel that is late", "not_for": "refunds", "examples": ["where is it"]}
    question = {**CHOICE, "criteria": {**CHOICE["criteria"], "shipping": shipping}}
    closer, _, _ = drafted(question)
    made = rewording.reworded(parsed(question), closer.texts)["criteria"]["shipping"]
    assert made["what"].startswith("A parcel that is late \u2014 also when it mentions")
    assert (made["not_for"], made["examples"]) == ("refunds", ["where is it"])


def test_a_noul_without_cases_gets_the_words_in_its_instructions():
    noul = {"type": "noul", "instructions": "Is it urgent?"}
    states = [
        failing("a", "We are offline, the server is on fire", True, False),
        failing("b", "Everything is offline, server dead", True, False),
    ]
    closer, _, _ = drafted(noul, states=states, passing=[])
    assert closer.texts.instructions.startswith("Is it urgent? \u2014 also when it mentions")
    assert "offline" in closer.texts.instructions and "server" in closer.texts.instructions
    assert closer.texts.criteria == {}


def test_a_score_reads_levels_by_number():
    score = {
        "type": "score",
        "instructions": "How angry?",
        "criteria": ["calm", "cross", "furious"],
    }
    states = [
        failing("a", "I am livid, shouting now", 2, 0.4),
        failing("b", "Livid and shouting", 2, 0.6),
    ]
    closer, _, _ = drafted(score, states=states, passing=[])
    assert closer.texts.criteria["2"] == "furious \u2014 also when it mentions livid or shouting"


def test_a_request_that_is_no_drafting_request_is_refused_in_the_wire_s_words():
    body = drafting.request_body(parsed(CHOICE), FAILING, PASSING, 3, "m")
    body["messages"][-1]["content"] = "not json"
    status, reply = standin.respond_chat(body)
    assert status == 400 and "not JSON" in reply["error"]["message"]


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_demo_suggests_one_candidate_proven_better_and_one_refuted():
    """On a fresh database (ids from 1, as `make run` has them) the demo's refund-triage
    suggestion for `desk`: closer proven better on the held-out states, apart refuted."""
    from questions.dev import demo
    from questions.models import Suggestion

    done = demo.demo_load()
    suggestion = Suggestion.objects.get()
    assert suggestion.status == "done" and suggestion.calls_failed == 0
    assert any(line.startswith(f"suggestion {suggestion.pk} for refund-triage") for line in done)
    by = {c["number"]: c for c in suggestion.candidates}
    assert by[1]["verdict"] == proof.BETTER and by[1]["why"].startswith("Closer")
    assert by[2]["verdict"] == proof.WORSE and by[2]["why"].startswith("Apart")
    assert by[3]["verdict"] == proof.NOT_PROVEN and by[3]["why"].startswith("By heart")
    # by heart wins on the training states it was drafted from (the stand-in's own reading,
    # asked here in process): shown all the same as what it is on the held-out ones
    heart = parsed(by[3]["question"])
    failing = suggestion.question_set.sample_states.filter(name__in=suggestion.plan["failing"])
    won = [
        standin.answer(heart, s.state)["choice"] == s.expected["desk"] for s in failing
    ]  # each of them failed with v1's words
    assert len(won) == len(suggestion.plan["failing"]) and sum(won) >= len(won) // 4
    assert by[1]["proof"]["n"] >= proof.FEW_STATES  # no "fewer than 20" caveat
    assert suggestion.candidates[0]["number"] == 1  # ranked first
    assert suggestion.evidence and suggestion.evidence[0]["findings"]


@pytest.mark.django_db(reset_sequences=True)  # the same ids, so the same split, every run
def test_a_new_user_s_set_of_60_labelled_states_gets_one_candidate_proven_better(settings):
    """Not the demo: a set of its own (refund triage's `desk` alone), its deliveries and
    refund-only requests added (cycled) until each kind has enough states on each side of the
    split, whatever ids the database hands out; the stand-in answers, drafts and proves."""
    from questions import roles, services
    from questions.dev.demo_deliveries import DELIVERY_STATES
    from questions.dev.demo_refunds import REFUND_TRIAGE
    from questions.selectors.holdout import holdout_ids
    from questions.services import suggestions
    from tests import factories
    from tests.providers import stand_in_serving

    writer = factories.author()
    qs = factories.question_set("triage", owner=writer, doc={"desk": REFUND_TRIAGE["desk"]})
    sides: dict[tuple[str, bool], int] = {}
    i = 0
    while (
        len(qs.sample_states.all()) < 60
        or min(sides.get((d, h), 0) for d in ("shipping", "billing") for h in (True, False)) < 8
    ):
        row = DELIVERY_STATES[i % len(DELIVERY_STATES)]
        state = services.sample_state_create(
            question_set=qs,
            name=f"{row['name']} {i}",
            state={**row["state"], "orders": i},
            author=writer,
            expected={"desk": row["expected"]["desk"]},
        )
        key = (row["expected"]["desk"], state.pk in holdout_ids(qs))
        sides[key] = sides.get(key, 0) + 1
        i += 1
    with stand_in_serving(settings):
        version = factories.draft(qs)
        run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
        services.batch_execute(run.pk)
        plan = suggestions.suggestion_plan(version=version, question="desk", user=roles.OPERATOR)
        done = suggestions.suggestion_execute(
            suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False).pk
        )
    assert qs.sample_states.count() >= 60 and done.status == "done"
    assert len(done.candidates) == 3
    best = done.candidates[0]  # ranked first
    assert (best["number"], best["verdict"]) == (1, proof.BETTER) and "courier" in best["why"]
    assert best["proof"]["difference_interval"][0] > 0
    for c in done.candidates:  # each verdict is its interval's
        low, high = c["proof"]["difference_interval"]
        assert (c["verdict"] == proof.BETTER) == (low > 0)
        assert (c["verdict"] == proof.WORSE) == (high < 0)
