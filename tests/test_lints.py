"""The semantic lints (questions/core/lints.py): each fires on questions written to show it and
stays quiet on well-written ones; the false-positive rate docs/authoring.md states is the one
measured here."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from questions.core import lints, spec
from questions.core.check import validate
from questions.dev import demo_sets
from tests import strategies

HERE = Path(__file__).parent
BAD = json.loads((HERE / "lint_corpus" / "bad.json").read_text())["cases"]
GOOD = json.loads((HERE / "lint_corpus" / "good.json").read_text())["sets"]
EXAMPLES = HERE / "examples"
README = HERE.parent / "docs" / "authoring.md"

#: warnings on the well-written corpus that are true findings (the ecosystem review called the
#: approved `gestures` v2 `energy` rubric and `support-routing`'s `frustration` bare levels)
JUSTIFIED = {("energy", "bare_levels"), ("frustration", "bare_levels")}


def check(questions, states=None):
    return validate(questions, limits=spec.DEFAULT_LIMITS, sample_states=states)


def semantic(result):
    return [w for w in result.warnings if w.code in lints.CODES]


def good_sets():
    """The well-written corpus: the demo's sets (with their sample states), the examples, the
    seeds' examples and the hand-written sets of lint_corpus/good.json."""
    out = []
    for s in demo_sets.SETS:
        states = [st["state"] for st in s["states"]]
        for i, version in enumerate(s["versions"], 1):
            out.append((f"demo {s['slug']} v{i}", version, states))
    for name in ("runtime-request.json", "typesafe-request.json"):
        body = json.loads((EXAMPLES / name).read_text())
        out.append((f"examples/{name}", body["questions"], [body["state"]]))
    out.extend((f"good.json {s['name']}", s["questions"], s.get("states")) for s in GOOD)
    return out


BAD_CASES = [
    pytest.param(code, case, id=f"{code}-{i}")
    for code, cases in BAD.items()
    for i, case in enumerate(cases)
]


def test_every_code_has_bad_examples():
    assert set(BAD) == set(lints.CODES)
    assert all(len(cases) >= 2 for cases in BAD.values())


@pytest.mark.parametrize(("code", "case"), BAD_CASES)
def test_the_lint_fires_on_a_question_written_to_show_it(code, case):
    result = check(case["questions"], case.get("states"))
    assert result.valid, result.errors
    qid = case.get("question", "q")
    fired = [w for w in result.warnings if w.code == code and w.question == qid]
    assert fired, [str(w) for w in result.warnings]
    if "at" in case:
        assert [w.path for w in fired] == [case["at"]]
    warning = fired[0]
    assert warning.path == spec.path_of(warning.loc)
    assert warning.loc[:2] == ("questions", qid)


@pytest.mark.parametrize(("name", "questions", "states"), good_sets(), ids=lambda v: str(v)[:40])
def test_well_written_questions_get_no_semantic_warning(name, questions, states):
    found = {(w.question, w.code) for w in semantic(check(questions, states))}
    assert found <= JUSTIFIED, name


def test_the_justified_findings_are_found():
    found = set()
    for _name, questions, states in good_sets():
        found |= {(w.question, w.code) for w in semantic(check(questions, states))}
    assert found == JUSTIFIED


def false_positive_rate() -> tuple[int, int]:
    """(warnings on well-written questions that are not justified findings, questions)."""
    questions = warnings = 0
    for _name, qs, states in good_sets():
        questions += len(qs)
        warnings += sum((w.question, w.code) not in JUSTIFIED for w in semantic(check(qs, states)))
    return warnings, questions


def test_the_authoring_docs_state_the_measured_false_positive_rate():
    warnings, questions = false_positive_rate()
    text = README.read_text()
    assert f"{warnings} false positives on {questions} well-written questions" in text


def test_the_authoring_docs_list_every_lint_with_an_example():
    text = README.read_text()
    for code in lints.CODES:
        assert re.search(rf"^\| `{code}` \|.+\|.+\|$", text, re.MULTILINE), code


def test_messages_quote_the_words_that_fired_and_say_what_to_do():
    result = check(
        {
            "q": {
                "type": "noul",
                "instructions": "How many days ago was the order placed?",
                "criteria": {"true": "Recently", "false": "Long ago"},
            }
        }
    )
    by_code = {w.code: w for w in result.warnings}
    assert by_code["counting"].message.startswith("“How many” asks the model to count")
    assert "count in your code" in by_code["counting"].message
    assert by_code["counting"].actual == "How many"
    assert "“days ago”" in by_code["state_comparison"].message
    assert "compare in your code" in by_code["state_comparison"].message


def test_lints_never_repair():
    for code, cases in BAD.items():
        for case in cases:
            before = copy.deepcopy(case["questions"])
            result = check(case["questions"], case.get("states"))
            assert case["questions"] == before, code
            assert result.document.questions_json() == before, code


def test_lints_off_means_no_semantic_warning():
    questions = BAD["counting"][0]["questions"]
    assert validate(questions, limits=spec.DEFAULT_LIMITS, lints=False).warnings == []


def test_words_in_quotes_or_examples_are_the_users_data():
    quiet = {
        "q": {
            "type": "choice",
            "instructions": "Does the customer write “how many refunds can I get” or 'sum it up'?",
            "criteria": {
                "limit": {
                    "what": "Asks about a limit",
                    "examples": ["how many refunds can I have?", "write me a summary"],
                },
                "other": "Anything else",
            },
        }
    }
    assert semantic(check(quiet)) == []
    loud = copy.deepcopy(quiet)
    loud["q"]["instructions"] = "How many refunds can the customer get?"
    assert [w.code for w in semantic(check(loud))] == ["counting"]


def test_words_match_whole_words_only():
    questions = {
        "q": {
            "type": "noul",
            "instructions": "Is the recount request a goodwill gesture, or a summons?",
            "criteria": {"true": "Goodwill", "false": "Legal"},
        }
    }
    assert semantic(check(questions)) == []


def test_generation_is_an_imperative_not_a_users_request():
    asked = "Does the user ask the assistant to summarise the thread and write a reply?"
    told = "Summarise the thread and write a reply."
    base = {"type": "noul", "criteria": {"true": "Yes, the user asks for it", "false": "Not so"}}
    assert "generation" not in {
        w.code for w in check({"q": {**base, "instructions": asked}}).warnings
    }
    assert "generation" in {w.code for w in check({"q": {**base, "instructions": told}}).warnings}


def test_a_vague_word_anchored_by_criteria_or_a_definition_is_quiet():
    anchored = {
        "type": "noul",
        "instructions": "Is the reply appropriate?",
        "criteria": {"true": "Polite and on topic", "false": "Rude or off topic"},
    }
    defined = {
        "type": "noul",
        "instructions": "Is the reply appropriate: polite, on topic and free of promises?",
    }
    assert semantic(check({"q": anchored})) == []
    assert semantic(check({"q": defined})) == []


def test_double_negation_needs_both_in_one_clause():
    one_each = {
        "type": "noul",
        "instructions": "Does the command not write files, and not open the network?",
        "criteria": {"true": "Harmless", "false": "Writes or connects"},
    }
    assert "double_negation" not in {w.code for w in check({"q": one_each}).warnings}


def test_missing_instructions_on_a_bare_noul_is_left_to_the_contract():
    """A noul with neither instructions nor criteria has nothing to judge: the contract's
    business (an error there), not a second warning here."""
    for bare in (
        {"type": "noul"},
        {"type": "noul", "criteria": None},
        {"type": "noul", "criteria": {}},
    ):
        codes = {w.code for w in check({"q": bare}).warnings}
        assert "missing_instructions" not in codes


def test_one_word_instructions_is_not_missing_and_two_words_are_not_one():
    assert [
        w.code
        for w in semantic(check({"q": {**BAD["one_word_instructions"][0]["questions"]["q"]}}))
    ] == ["one_word_instructions"]
    two = {
        "type": "noul",
        "instructions": "Spam message?",
        "criteria": {"true": "Bulk", "false": "Personal"},
    }
    assert semantic(check({"q": two})) == []


def test_state_paths_are_checked_only_against_sample_states():
    case = BAD["unknown_state_path"][0]
    assert "unknown_state_path" not in {w.code for w in check(case["questions"]).warnings}
    assert "unknown_state_path" in {
        w.code for w in check(case["questions"], case["states"]).warnings
    }
    # text states have no paths: a backticked word quotes their text
    assert "unknown_state_path" not in {
        w.code for w in check(case["questions"], ["rm -rf /", None]).warnings
    }


@pytest.mark.parametrize(
    "path",
    [
        "command",
        "state.command",
        "$.command",
        "orders[0].total",
        "orders.0.total",
        "orders.total",
        "orders[].total",
        "rm",
    ],
)
def test_known_state_paths_are_quiet(path):
    states = [{"command": "rm -rf build", "orders": [{"total": 3}]}]
    questions = {
        "q": {
            "type": "noul",
            "instructions": f"Does `{path}` name a deletion?",
            "criteria": {"true": "Deletes", "false": "Keeps"},
        }
    }
    assert semantic(check(questions, states)) == []


def test_state_paths_are_read_lazily_once():
    calls = []

    def load():
        calls.append(1)
        return [{"command": "ls"}]

    paths = lints.StatePaths(load)
    plain = {
        "q": {
            "type": "noul",
            "instructions": "Is it risky?",
            "criteria": {"true": "Risky", "false": "Safe"},
        }
    }
    check(plain, paths)
    assert calls == []
    ticked = {
        "a": {
            "type": "noul",
            "instructions": "Is `command` risky?",
            "criteria": {"true": "Risky", "false": "Safe"},
        },
        "b": {
            "type": "noul",
            "instructions": "Is `cwd` a home folder?",
            "criteria": {"true": "Home", "false": "Elsewhere"},
        },
    }
    found = [w.question for w in check(ticked, paths).warnings if w.code == "unknown_state_path"]
    assert found == ["b"]
    assert calls == [1]


def test_a_state_key_named_like_another_question_is_a_path_not_a_reference():
    questions = {
        "command": {
            "type": "noul",
            "instructions": "Is the command a deletion?",
            "criteria": {"true": "Deletes", "false": "Keeps"},
        },
        "risk": {
            "type": "noul",
            "instructions": "Could `command` destroy data?",
            "criteria": {"true": "Can destroy", "false": "Cannot"},
        },
    }
    assert semantic(check(questions, [{"command": "rm -rf /"}])) == []
    named = [w for w in check(questions).warnings if w.code == "names_other_question"]
    assert [(w.question, w.actual) for w in named] == [("risk", ["command"])]


def test_a_common_word_id_in_ordinary_prose_is_not_a_reference():
    questions = {
        "risk": {
            "type": "score",
            "instructions": "How much damage could the command do?",
            "criteria": [
                "None: reads only",
                "Some: changes files in the project",
                "Severe: destroys data",
            ],
        },
        "confirm": {
            "type": "noul",
            "instructions": "Should a person confirm the command, given its risk to the machine?",
            "criteria": {"true": "Ask first", "false": "Run it"},
        },
    }
    assert semantic(check(questions)) == []


def test_identical_questions_ignore_ids_case_and_punctuation_but_not_meaning():
    case = BAD["identical_questions"][1]["questions"]
    assert [w.question for w in check(case).warnings if w.code == "identical_questions"] == ["b"]
    different = copy.deepcopy(case)
    different["b"]["criteria"] = list(reversed(different["b"]["criteria"]))
    assert "identical_questions" not in {w.code for w in check(different).warnings}


def test_lints_run_on_the_questions_that_parse_when_others_have_errors():
    questions = {
        "broken": {"type": "choice", "criteria": {"only": "one option"}},
        "q": BAD["counting"][0]["questions"]["q"],
    }
    result = check(questions)
    assert not result.valid
    assert [(w.question, w.code) for w in semantic(result)] == [("q", "counting")]


def test_the_corpus_is_large_enough_to_measure():
    warnings, questions = false_positive_rate()
    assert questions >= 40
    assert warnings == 0


def test_structured_instructions_and_descriptions_are_read_for_their_words():
    questions = {
        "q": {
            "type": "choice",
            "instructions": {"task": "How many desks should see it?", "note": ["Pick one."]},
            "criteria": {
                "one": {"label": "One desk", "when": ["the customer is not unhappy"]},
                "many": {"text": "Several desks", "examples": ["how many desks are there"]},
                "other": ["Something else"],
            },
        }
    }
    result = check(questions)
    assert result.valid, result.errors
    found = {(w.code, w.path) for w in semantic(result)}
    assert found == {
        ("counting", "questions.q.instructions"),
        ("double_negation", "questions.q.criteria.one"),
    }
    one_word = {
        "q": {
            "type": "noul",
            "instructions": ["Spam?"],
            "criteria": {"true": "Bulk", "false": "Personal"},
        }
    }
    assert [w.code for w in semantic(check(one_word))] == ["one_word_instructions"]
    blank = {
        "q": {
            "type": "score",
            "instructions": {"task": " "},
            "criteria": ["Calm and patient", "Angry and loud"],
        }
    }
    assert [w.code for w in semantic(check(blank))] == ["missing_instructions"]


def test_a_noul_with_nothing_to_judge_is_an_error_and_gets_no_second_warning():
    result = check({"q": {"type": "noul", "criteria": {"true": None}}})
    assert [e.code for e in result.errors] == ["nothing_to_judge"]
    assert semantic(result) == []


def test_a_bodys_own_state_is_one_of_its_sample_states():
    questions = {
        "q": {
            "type": "noul",
            "instructions": "Does `command` delete files?",
            "criteria": {"true": "Deletes", "false": "Keeps"},
        }
    }
    codes = lambda body: {w.code for w in check(body).warnings}  # noqa: E731
    assert "unknown_state_path" not in codes({"state": {"command": "ls"}, "questions": questions})
    assert "unknown_state_path" in codes({"state": {"cmd": "ls"}, "questions": questions})
    assert "unknown_state_path" not in codes(questions)  # a bare map has no state


@pytest.mark.parametrize(
    "instructions",
    [
        "Write access to production: does the command need it?",
        "Name and address: are both given?",
        "Count on the user: will they pay?",
        "Is it under review?",
        "Is the customer over the moon?",
        "Does the ticket mention a version number of the app?",
    ],
)
def test_trigger_words_in_other_senses_are_quiet(instructions):
    question = {
        "type": "noul",
        "instructions": instructions,
        "criteria": {"true": "It holds", "false": "It does not"},
    }
    assert semantic(check({"q": question})) == []


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    qmap=strategies.question_maps,
    states=st.none() | st.lists(strategies.json_values, max_size=3),
)
def test_the_lints_never_raise_and_never_change_the_questions(qmap, states):
    before = copy.deepcopy(qmap)
    result = validate(qmap, limits=spec.DEFAULT_LIMITS, sample_states=states)
    assert qmap == before
    for warning in semantic(result):
        assert warning.code in lints.CODES
        assert warning.question in qmap
        assert warning.path == spec.path_of(warning.loc)


# --- numbers in another form, and chained lookups ----------------------------------------------


def _noul(instructions: str) -> dict:
    return {
        "q": {
            "type": "noul",
            "instructions": instructions,
            "criteria": {"true": "It holds", "false": "It does not"},
        }
    }


def test_numeric_representation_quotes_the_number_and_says_to_normalise_it():
    [warning] = [w for w in semantic(check(_noul("Is the refund 2.5M or more?")))]
    assert warning.code == "numeric_representation"
    assert warning.message.startswith("“2.5M” writes a number in one form")
    assert "normalise the number in your code" in warning.message
    assert warning.actual == "2.5M"
    machine = semantic(check(_noul("Is the colour rgb(255, 0, 0) a warm one?")))
    assert [w.code for w in machine] == ["numeric_representation"]
    assert "machine encoding" in machine[0].message and "`colour: red`" in machine[0].message


def test_multi_hop_quotes_the_chain_and_says_to_resolve_it_in_code():
    [warning] = semantic(
        check(_noul("Is the customer of the order referenced by the ticket a VIP?"))
    )
    assert warning.code == "multi_hop"
    assert warning.actual == "customer of the order referenced by the"
    assert warning.message.startswith("“customer of the order referenced by the” makes the model")
    assert "resolve the chain in your code" in warning.message


@pytest.mark.parametrize(
    "instructions",
    [
        "Does the message mention 3 items?",
        "Is this about version 2 of the app?",
        "Did the customer pay with card 4242?",
        "Is the ticket #123456 about billing?",  # a ticket number, not a colour
        "Does the customer ask whether 50% off still applies?",  # the user's request
        "Is the sender of the email a customer?",  # one hop
        "Does the customer's message name an order?",
        "Is the account's owner on the call?",
        "It's a ticket: is it about the customer's invoice?",  # "it's" is no possessive
        "Does the user say their order of the week is late?",
    ],
)
def test_numbers_written_plainly_and_single_hops_are_quiet(instructions):
    assert semantic(check(_noul(instructions))) == []


@pytest.mark.parametrize(
    ("instructions", "words"),
    [
        ("Is the total more than 10K?", "10K"),
        ("Does the plan cost 30 percent more?", "30 percent"),
        ("Is the payout 3 million or more?", "3 million"),
        ("Is the value in the hex code a valid one?", "hex code"),
        ("Does the base64 payload hold a password?", "base64"),
    ],
)
def test_numbers_in_another_form_fire(instructions, words):
    fired = [w for w in semantic(check(_noul(instructions))) if w.code == "numeric_representation"]
    assert [w.actual for w in fired] == [words]


@pytest.mark.parametrize(
    "instructions",
    [
        "Is the owner of the account whose card was declined a VIP?",
        "Does the team of the agent assigned to the ticket work nights?",
        "Cross-reference the invoice with the payment: do they agree?",
        "Is the tone of the end of the conversation hostile?",
        "If the order shipped, then is it late if the parcel is lost?",
    ],
)
def test_chained_lookups_fire(instructions):
    assert "multi_hop" in {w.code for w in semantic(check(_noul(instructions)))}


@pytest.mark.parametrize(
    ("instructions", "code"),
    [  # the shapes jevkit-lint 0.1.1's JEV006 (indirection) and JEV017 (numeric) look for
        ("Is the name of the owner of the account on file?", "multi_hop"),
        ("Is whoever signed the order the person whose card paid?", "multi_hop"),
        ("Would this have been approved? It would have been last year.", "multi_hop"),
        ("Is the seller indirectly linked to the buyer?", "multi_hop"),
        ("Is the brand colour #a1b2c3 warm?", "numeric_representation"),
        ("Does the binary representation end in a one?", "numeric_representation"),
        ("Is the assembly instruction a jump?", "numeric_representation"),
        ("Does the bytecode call the network?", "numeric_representation"),
    ],
)
def test_the_oracles_shapes_of_these_failure_modes_fire(instructions, code):
    assert code in {w.code for w in semantic(check(_noul(instructions)))}
